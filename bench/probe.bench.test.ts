import { env, exports } from "cloudflare:workers";
import { it } from "vitest";

it("probe", async () => {
  const ex = exports as unknown as { default: Fetcher };
  for (const p of ["/", "/vendor/htmx.min.js", "/console.css"]) {
    const r = await ex.default.fetch(`http://localhost${p}`);
    const t = await r.text();
    console.log("exports", p, r.status, r.headers.get("content-type"), t.length);
  }
  console.log("ASSETS", typeof env.ASSETS);
  if (env.ASSETS) {
    const r = await env.ASSETS.fetch("http://localhost/vendor/htmx.min.js");
    console.log("assets", r.status, (await r.text()).length);
  }
});
