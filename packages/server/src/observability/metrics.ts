import client from 'prom-client';
import type { Counter, Gauge, Histogram, Metrics } from '@realmgate/spi';

/** One Prometheus registry per server instance (tests start several in one process). */
export class MetricsRegistry implements Metrics {
  readonly registry = new client.Registry();
  readonly httpRequests: client.Histogram<'method' | 'route' | 'status'>;

  constructor() {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'realmgate_' });
    this.httpRequests = new client.Histogram({
      name: 'realmgate_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const metric = this.existing(name) ?? new client.Counter({ name, help, labelNames, registers: [this.registry] });
    return { inc: (labels, value = 1) => (metric as client.Counter).inc(labels ?? {}, value) };
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    const metric = (this.existing(name) ?? new client.Gauge({ name, help, labelNames, registers: [this.registry] })) as client.Gauge;
    return {
      set: (labels, value) => metric.set(labels ?? {}, value),
      inc: (labels, value = 1) => metric.inc(labels ?? {}, value),
      dec: (labels, value = 1) => metric.dec(labels ?? {}, value),
    };
  }

  histogram(name: string, help: string, labelNames: readonly string[] = [], buckets?: readonly number[]): Histogram {
    const metric = (this.existing(name) ??
      new client.Histogram({ name, help, labelNames, registers: [this.registry], ...(buckets ? { buckets: [...buckets] } : {}) })) as client.Histogram;
    return { observe: (labels, value) => metric.observe(labels ?? {}, value) };
  }

  /** A gauge or counter whose value is read when /metrics is scraped (a cache's own tallies, say). */
  readAtScrape(name: string, help: string, kind: 'gauge' | 'counter', read: () => number): void {
    if (this.existing(name)) return;
    if (kind === 'gauge') {
      new client.Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
      return;
    }
    let reported = 0;
    new client.Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        const now = read();
        if (now > reported) this.inc(now - reported);
        reported = now;
      },
    });
  }

  private existing(name: string) {
    return this.registry.getSingleMetric(name);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
