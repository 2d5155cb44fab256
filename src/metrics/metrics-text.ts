import type { Registry } from 'prom-client';

/** A scrape answer: the Prometheus text exposition and the Content-Type to serve it with. */
export interface MetricsText {
  contentType: string;
  body: string;
}

/** Renders a registry for an HTTP handler (collect callbacks run now). */
export async function metricsText(registry: Registry): Promise<MetricsText> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
