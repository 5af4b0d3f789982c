import { tailTruthRows } from "./tail-truth-rows";

/** The plain-agent tail rows (hook drops or resumes, keepAlive only) on the classic tail: one trace item per step. */
tailTruthRows("classic");
