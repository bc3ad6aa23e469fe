/**
 * Logs for a person at a terminal (LOG_FORMAT=pretty, the default when standard output is a
 * terminal): one short line per request, `12:04:31  POST /v1/generate → 201 in 212 ms`, and a
 * line per other message with its level when it is not info. Production logs stay JSON lines
 * (LOG_FORMAT=json, the default otherwise): this reads those same lines, so both say the same.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: '', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the line's text already says. */
const SAID = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId', 'req', 'res', 'responseTime', 'err']);
/** Requests seen arriving and not yet answered, at most this many (an aborted one is never answered). */
const MAX_OPEN = 1000;

interface Line {
  level?: number;
  time?: number;
  msg?: string;
  reqId?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
  err?: { message?: string; stack?: string };
  [k: string]: unknown;
}

const two = (n: number) => String(n).padStart(2, '0');
function clock(ms: number | undefined): string {
  const d = new Date(ms ?? Date.now());
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** A pino destination that writes readable lines to `out`. */
export function prettyLog(out: { write(text: string): unknown } = process.stdout): { write(line: string): void } {
  const open = new Map<string, string>();
  return {
    write(text: string) {
      for (const raw of text.split('\n')) {
        if (!raw.trim()) continue;
        let o: Line;
        try {
          o = JSON.parse(raw) as Line;
        } catch {
          out.write(`${raw}\n`);
          continue;
        }
        const formatted = format(o, open);
        if (formatted) out.write(`${formatted}\n`);
      }
    },
  };
}

function format(o: Line, open: Map<string, string>): string | undefined {
  const time = clock(o.time);
  const level = LEVELS[o.level ?? 30] ?? String(o.level);
  // the greeting says where the server listens
  if (/^Server listening at /.test(o.msg ?? '')) return undefined;
  if (o.msg === 'incoming request' && o.reqId) {
    if (open.size >= MAX_OPEN) open.delete(open.keys().next().value!);
    open.set(o.reqId, `${o.req?.method ?? ''} ${o.req?.url ?? ''}`);
    return undefined;
  }
  if (o.msg === 'request completed' && o.reqId) {
    const what = open.get(o.reqId) ?? o.reqId;
    open.delete(o.reqId);
    const ms = o.responseTime === undefined ? '' : ` in ${Math.round(o.responseTime)} ms`;
    return `${time}  ${what} → ${o.res?.statusCode ?? '?'}${ms}`;
  }
  const extra = Object.fromEntries(Object.entries(o).filter(([k]) => !SAID.has(k)));
  const parts = [
    time,
    level && ` ${level}`,
    ` ${o.msg ?? ''}`,
    o.reqId ? ` (${open.get(o.reqId) ?? o.reqId})` : '',
    Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : '',
    o.err ? `\n  ${(o.err.stack ?? o.err.message ?? '').split('\n').join('\n  ')}` : '',
  ];
  return parts.join('');
}
