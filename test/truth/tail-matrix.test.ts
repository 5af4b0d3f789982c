import { tailMatrix } from "./tail-rows";

/** The main truth matrix on the classic tail (`tail_consumers`, worker/tail.ts): one trace item per invocation. */
tailMatrix("classic");
