// Prometheus metrics for every component: one Registry per process, rendered by the HTTP layer.
//
//   const registry = new Registry();
//   const age = registry.gauge({ name: "rlark_source_revision_age_seconds", help: "...", labelNames: ["repo"] });
//   age.labels({ repo }).set(seconds);
//   registry.onCollect(async () => depth.labels({ controller }).set(queue.length));
//   res.setHeader("content-type", contentType); res.end(await registry.text());

export { Counter, contentType, Gauge, Histogram, Registry } from "./registry.ts";
