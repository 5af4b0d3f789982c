import { chatTailMatrix } from "./tail-rows";

/** The chat rows of the truth matrix on the classic tail (`tail_consumers`, worker/tail.ts): one trace item per step. */
chatTailMatrix("classic");
