// Copies the browser libraries the console serves (htmx, chart.js) from node_modules into the
// static assets folder: served by the Worker itself, never from a CDN. Run by `npm start`/`npm test`.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import path from "node:path";

const out = "console/public/vendor";
mkdirSync(out, { recursive: true });
const files = [
  ["htmx.org/dist/htmx.min.js", "htmx.min.js"],
  ["chart.js/dist/chart.umd.min.js", "chart.umd.min.js"],
];
for (const [from, to] of files) {
  // Read from the package folders directly: chart.js does not export its UMD build path.
  const src = path.join("node_modules", from);
  if (!existsSync(src)) {
    console.error(`✖ ${src} is missing; run npm install`);
    process.exit(1);
  }
  copyFileSync(src, path.join(out, to));
}
console.log(`✓ vendored ${files.map(([, to]) => to).join(", ")} into ${out}`);
