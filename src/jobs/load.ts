/**
 * Background work yields to requests. Rendering an accepted postcard is CPU work that nobody
 * waits for (the request was answered 202 when it was stored), and its steps on the HTTP thread
 * (loading the row, storing the PDF, the writes) queue behind the requests. So while requests keep
 * this process's event loop busy, postcards render one at a time with a pause before each; once
 * the load drops they render at full concurrency again. Nothing starves: after each pause one
 * render starts whatever the load. The postcards wait in the database, so a stop loses none.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export interface Load {
  /** Whether requests keep this process busy now. */
  busy(): boolean;
  /** Resolves when background work may try again. */
  pause(): Promise<void>;
}

/** Never busy: background work runs at once (tests, and engines without requests). */
export const NO_LOAD: Load = { busy: () => false, pause: () => Promise.resolve() };

/**
 * Busy when the event loop was working more than `threshold` of the last `windowMs` (Node's event
 * loop utilisation, which counts a synchronous SQLite commit as work). The pause is wall time, not
 * the service's clock: it is about the CPU, not about a business deadline.
 */
export function eventLoopLoad({ threshold = 0.7, windowMs = 200, pauseMs = 200 } = {}): Load {
  let since: EventLoopUtilization = performance.eventLoopUtilization();
  let measuredAt = performance.now();
  let busy = false;
  return {
    busy: () => {
      const now = performance.now();
      if (now - measuredAt >= windowMs) {
        const current = performance.eventLoopUtilization();
        busy = performance.eventLoopUtilization(current, since).utilization > threshold;
        since = current;
        measuredAt = now;
      }
      return busy;
    },
    pause: () => new Promise<void>((resolve) => setTimeout(resolve, pauseMs).unref()),
  };
}
