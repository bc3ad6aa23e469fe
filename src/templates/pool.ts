/**
 * Templates off the caller's thread: a pool of worker threads (piscina) that compile uploads, fill
 * templates and draw them, each thread compiling a template once and rendering it many times. The
 * service's HTTP thread never parses, fills or draws a template, so a cheap request is answered
 * while documents render, a hostile template is bounded by its thread's budget, and every core
 * renders. HTML and Word templates are filled on a thread and printed by Chromium or LibreOffice in
 * their own processes (html.ts, docx.ts); the pages they printed are counted on a thread again.
 *
 * A task names its template by a key unique to the loaded template object; the template's source
 * and assets travel only when a thread has not seen the key yet. A task that takes longer than the
 * time budget is stopped (its thread is ended and replaced) and answered with
 * `render_limit_exceeded`; so is one that needs more memory than a thread may hold, and the memory
 * goes with the thread. A thread is ended only outside Node's zlib (see zlib.ts), and `close()` lets
 * the tasks under way finish first (each within its budget).
 */
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { DEFAULT_RENDER_MEMORY_MB, DEFAULT_RENDER_TIMEOUT_MS, defaultRenderThreads } from '../config';
import { PaperlinkError, reviveError, TemplateError } from '../errors';
import {
  checkPages,
  finishOf,
  loadTemplate,
  originOf,
  printFilled,
  renderTemplate,
  setOrigin,
  type LoadOptions,
  type RenderOptions,
  type TemplateOrigin,
  type TemplateSummary,
} from './index';
import type { RenderLimits } from '../config';
import { renderLimits, RenderLimitError } from './limits';
import { Slots } from './slots';
import { mergeParts, openPart, type MergeOptions, type Part } from './merge';
import { viewCopy, type ViewCopy, type ViewOptions } from './viewcopy';
import { printReady, proof, type PrintReady, type ProofOptions } from './print';
import type { PresetName } from './presets';
import type { RenderReply, RenderTask } from './worker';
import { stopOutsideZlib, zlibGate } from './zlib';
import { renderDuration, renders, watchPool } from '../metrics';
import { inSpan } from '../tracing';

/** Loads and renders templates; both reject with the same PaperlinkErrors as loadTemplate and renderTemplate. */
export interface Renderer {
  /** Compiles a template (an upload, or one read from the database) and says what it is. */
  load(source: string | Uint8Array, options?: LoadOptions): Promise<TemplateSummary>;
  render(template: TemplateSummary, values: Record<string, string>, options?: RenderOptions): Promise<Uint8Array>;
  /** The page count of a rendered PDF, or of an uploaded one (`field` names where it came from; read with merge.ts's guards). */
  pages(pdf: Uint8Array, field?: string): Promise<number>;
  /** Rendered and uploaded PDFs as one document (merge.ts), within the page limit. */
  merge(parts: Part[], options: MergeOptions): Promise<Uint8Array>;
  /**
   * What a Magic Link's recipient is shown of a stored document: stamped with a watermark, or one
   * page as a PNG (viewcopy.ts). With `options.drawn` the PDF is not read (it may be empty).
   */
  view(pdf: Uint8Array, options: ViewOptions): Promise<ViewCopy>;
  /** A rendered postcard checked against its size (the template's, or whichever its pages are) and marked for print (print.ts). */
  printReady(pdf: Uint8Array, size?: PresetName): Promise<PrintReady>;
  /** A rendered postcard's sides as a PNG, with its guides on request (print.ts). */
  proof(pdf: Uint8Array, options: ProofOptions): Promise<Uint8Array>;
  close(): Promise<void>;
}

export interface RendererOptions {
  /** Render threads; 0 renders on the calling thread (no time budget then). Default: the cores less one (at least one). */
  threads?: number;
  /** Longest one render may take, in milliseconds. */
  timeoutMs?: number;
  /** Most memory one render thread's heap may hold, in MB (a render needing more is stopped). */
  memoryMb?: number;
}

/** Loads and renders on the calling thread: for tools that render a few documents and exit. */
export const inProcessRenderer: Renderer = {
  load: loadTemplate,
  render: renderTemplate,
  pages: async (pdf, field) => (await openPart(pdf, field)).getPageCount(),
  merge: async (parts, options) => {
    const { pdf, pages } = await mergeParts(parts, options);
    checkPages(pages);
    return pdf;
  },
  view: viewCopy,
  printReady,
  proof,
  close: async () => undefined,
};

// the compiled worker: beside this file, or in dist/ when this file runs as TypeScript (the tests)
const workerFile = __filename.endsWith('.ts')
  ? path.resolve(__dirname, '../../dist/src/templates/worker.js')
  : path.join(__dirname, 'worker.js');

let keys = 0;
const keyOf = new WeakMap<TemplateSummary, string>();
/** A key for this loaded template, unique in this process (threads cache compiled templates by it). */
function templateKey(template: TemplateSummary): string {
  let key = keyOf.get(template);
  if (!key) {
    key = `${process.pid}:${++keys}`;
    keyOf.set(template, key);
  }
  return key;
}

/** The most files one template may name (images, fonts, style sheets). */
export const MAX_ASSETS = 1_000;

export class RenderPool implements Renderer {
  private readonly pool: Piscina;
  /** Every task not yet answered, waiting for a thread or on one. */
  private readonly running = new Set<Promise<unknown>>();
  /** One per thread: a task holds one while piscina has it. */
  private readonly slots = new Slots(() => this.threads);
  /**
   * Recipients' page images are drawn on a thread of their own, at the lowest priority: a viewer
   * paging through a long document takes no render thread from generate requests, and only the
   * CPU time they leave.
   */
  private readonly pagePool: Piscina;
  private readonly pageSlots = new Slots(() => 1);
  /** Stops the metrics' reading of this pool (close()). */
  private readonly unwatch: () => void;

  constructor(
    readonly threads: number,
    readonly timeoutMs: number = DEFAULT_RENDER_TIMEOUT_MS,
    readonly memoryMb: number = DEFAULT_RENDER_MEMORY_MB,
    /** The work limits each thread applies (limits.ts); by default this process's. */
    limits: RenderLimits = renderLimits(),
  ) {
    // threads start when work comes and stop after a minute idle. A small young generation suits
    // renders (short-lived garbage) and, with the cap on the old one, keeps the process's memory
    // bounded: V8 would otherwise let each thread's heap grow long before collecting it.
    const threadsOf = (maxThreads: number, lowest: boolean) =>
      new Piscina({
        filename: workerFile,
        minThreads: 0,
        maxThreads,
        idleTimeout: 60_000,
        concurrentTasksPerWorker: 1,
        resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: memoryMb },
        workerData: { limits, lowest },
      });
    this.pool = threadsOf(threads, false);
    this.pagePool = threadsOf(1, true);
    this.unwatch = watchPool(() => ({ size: this.threads, ...this.slots.state() }));
  }

  async load(source: string | Uint8Array, options: LoadOptions = {}): Promise<TemplateSummary> {
    const key = `${process.pid}:${++keys}`;
    const origin: TemplateOrigin = { source, assets: [], name: options.name };
    const absent: string[] = [];
    for (;;) {
      const reply = await this.run({ op: 'load', key, origin, absent });
      if ('wants' in reply) {
        // the thread asks for the files the template names; they are read here, where the resolver is
        for (const p of reply.wants) {
          const bytes = await options.assets?.(p);
          if (bytes) origin.assets.push([p, bytes]);
          else absent.push(p);
        }
        if (origin.assets.length + absent.length > MAX_ASSETS)
          throw new TemplateError(`The template names more than ${MAX_ASSETS} files. Use fewer images and fonts.`);
        continue;
      }
      const { loaded } = answer(reply, 'loaded');
      keyOf.set(loaded, key);
      setOrigin(loaded, origin);
      return loaded;
    }
  }

  async render(
    template: TemplateSummary,
    values: Record<string, string>,
    options: RenderOptions = {},
  ): Promise<Uint8Array> {
    const task = {
      op: 'fill' as const,
      key: templateKey(template),
      values,
      now: (options.now ?? new Date()).getTime(),
      timeoutMs: this.timeoutMs,
      standard: options.standard,
      metadata: options.metadata,
      attachments: options.attachments,
      numbering: options.numbering,
    };
    let reply = await this.run(task);
    if ('missing' in reply) {
      const origin = originOf(template);
      if (!origin)
        throw new Error('this template was not made by loadTemplate or a renderer; render it with renderTemplate');
      reply = await this.run({ ...task, origin });
    }
    const { filled, warnings } = answer(reply, 'filled');
    options.warnings?.push(...warnings);
    if ('pdf' in filled) return filled.pdf;
    // printed by Chromium or LibreOffice in their own processes, then counted on a thread
    const assets = template.kind === 'html' ? new Map(originOf(template)?.assets) : new Map<string, Uint8Array>();
    const printed = await printFilled(filled, assets, { ...options, timeoutMs: this.timeoutMs });
    // what is left to add to the printed PDF (finishOf) is added on the thread
    const { pages, pdf } = answer(
      await this.run({ op: 'pages', pdf: printed, ...finishOf(template.kind, options) }),
      'pages',
    );
    checkPages(pages);
    return pdf;
  }

  async pages(pdf: Uint8Array, field?: string): Promise<number> {
    return answer(await this.run({ op: 'pages', pdf, field }), 'pages').pages;
  }

  async merge(parts: Part[], options: MergeOptions): Promise<Uint8Array> {
    const { merged, count } = answer(
      await this.run({ op: 'merge', parts, options: { ...options, now: options.now.getTime() } }),
      'merged',
    );
    checkPages(count);
    return merged;
  }

  async view(pdf: Uint8Array, options: ViewOptions): Promise<ViewCopy> {
    return answer(await this.run({ op: 'view', pdf, options }), 'view').view;
  }

  async printReady(pdf: Uint8Array, size?: PresetName): Promise<PrintReady> {
    return answer(await this.run({ op: 'print', pdf, size }), 'printed').printed;
  }

  async proof(pdf: Uint8Array, options: ProofOptions): Promise<Uint8Array> {
    return answer(await this.run({ op: 'proof', pdf, options }), 'proof').proof;
  }

  /**
   * Runs one task, in the order tasks came: piscina is handed a task only when a thread is free for
   * it. (Its own queue is not first in, first out for tasks with an abort signal, as ours all are:
   * each time a thread took a task, the next one in line went to the back, and under sustained load
   * some renders waited 0.4–1.4 s behind dozens that came after them.)
   */
  private run(task: RenderTask): Promise<RenderReply> {
    // images for people to look at (a recipient's page, a postcard's proof) on the page thread
    const page = (task.op === 'view' && task.options.page !== undefined) || task.op === 'proof';
    const [pool, slots] = page ? [this.pagePool, this.pageSlots] : [this.pool, this.slots];
    const run = (async () => {
      await slots.take();
      try {
        return await this.runOnThread(pool, task);
      } finally {
        slots.release();
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run)).catch(() => undefined);
    return run;
  }

  /**
   * The time budget starts when a thread takes the task up (it says so on a port), not when it is
   * handed over: waiting for a new thread to start is not the document's doing.
   */
  private async runOnThread(pool: Piscina, task: RenderTask): Promise<RenderReply> {
    const { port1, port2 } = new MessageChannel();
    const controller = new AbortController();
    const gate = zlibGate();
    let timer: NodeJS.Timeout | undefined;
    port2.once('message', () => {
      timer = setTimeout(() => stopOutsideZlib(gate, () => controller.abort()), this.timeoutMs);
    });
    const running = pool.run({ ...task, started: port1, gate }, { signal: controller.signal, transferList: [port1] });
    try {
      return (await running) as RenderReply;
    } catch (err) {
      if (err instanceof PaperlinkError) throw err;
      if (controller.signal.aborted) {
        throw new RenderLimitError(
          'render_time_ms',
          `The template took longer than ${this.timeoutMs} ms to ${task.op === 'load' ? 'read' : 'render'} and was stopped. Make it smaller (fewer pages, items or images), or raise RENDER_TIMEOUT_MS.`,
        );
      }
      if ((err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        throw new RenderLimitError(
          'render_memory_mb',
          `The template needed more than ${this.memoryMb} MB of memory to ${task.op === 'load' ? 'read' : 'render'} and was stopped. Make it smaller (fewer pages, items or images), or raise RENDER_MEMORY_MB.`,
        );
      }
      throw err;
    } finally {
      clearTimeout(timer);
      port2.close();
    }
  }

  /** Tasks the threads have finished (renders, and the asks for a template a thread had not seen). */
  get completed(): number {
    return this.pool.completed;
  }

  async close(): Promise<void> {
    this.unwatch();
    // ending a thread mid-render could end it inside zlib: the renders under way end first
    while (this.running.size) await Promise.allSettled([...this.running]);
    await Promise.all([this.pool.destroy(), this.pagePool.destroy()]);
  }
}

/** The renderer a process uses: a pool of `threads` render threads, or the calling thread for 0. */
/**
 * A thread's reply as what was asked for, or the error it carries: a PaperlinkError as it was
 * thrown, a stack that overflowed (a template nested without end, such as a PDF page tree that
 * contains itself) as a limit, anything else as the failure it is.
 */
function answer<K extends string>(reply: RenderReply, want: K): Extract<RenderReply, Record<K, unknown>> {
  if (want in reply) return reply as Extract<RenderReply, Record<K, unknown>>;
  if ('error' in reply) throw reviveError(reply.error);
  if ('failure' in reply) {
    if (reply.failure.startsWith('RangeError: Maximum call stack size exceeded'))
      throw new RenderLimitError(
        'nesting_depth',
        'The template is nested too deeply to read or render (a structure that contains itself, or thousands of levels). Save it again from the program that made it.',
      );
    throw new Error(`rendering failed: ${reply.failure}`);
  }
  throw new Error('the render thread gave no answer');
}

export function createRenderer(options: RendererOptions = {}): Renderer {
  const threads = options.threads ?? defaultRenderThreads();
  return measured(threads > 0 ? new RenderPool(threads, options.timeoutMs, options.memoryMb) : inProcessRenderer);
}

/** `renderer` with each render counted and timed for operators (src/metrics.ts), by format and outcome, and traced (src/tracing.ts). */
function measured(renderer: Renderer): Renderer {
  return {
    load: (source, options) => renderer.load(source, options),
    pages: (pdf, field) => renderer.pages(pdf, field),
    merge: (parts, options) => renderer.merge(parts, options),
    view: (pdf, options) => renderer.view(pdf, options),
    printReady: (pdf, size) => renderer.printReady(pdf, size),
    proof: (pdf, options) => renderer.proof(pdf, options),
    close: () => renderer.close(),
    render: (template, values, options) => {
      const format = template.kind;
      return inSpan('paperlink.render', { 'paperlink.template_format': format }, async (span) => {
        const end = renderDuration.startTimer({ format });
        try {
          const pdf = await renderer.render(template, values, options);
          renders.inc({ format, outcome: 'ok' });
          span.setAttribute('paperlink.bytes', pdf.byteLength);
          return pdf;
        } catch (err) {
          renders.inc({ format, outcome: err instanceof PaperlinkError ? err.code : 'error' });
          throw err;
        } finally {
          end();
        }
      });
    },
  };
}
