import { afterAll, beforeAll } from "vitest";
import { publishEnvTeamKeys } from "../worker/access-tokens";
import { type Cell, matrixTable } from "./compare";

/**
 * A tail matrix file's setup around its rows: the team keys published first (the console's pages are read signed
 * in), and after the rows the tail's listening stopped and the matrix table printed.
 */
export function matrixHooks(stop: () => void, results: readonly { name: string; cells: Cell[] }[]): void {
  beforeAll(async () => {
    await publishEnvTeamKeys();
  });
  afterAll(() => {
    stop();
    console.log(matrixTable([...results]));
  });
}
