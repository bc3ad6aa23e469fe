/**
 * HTML templates: an HTML document with Liquid merge fields (`{{ customer.name }}`,
 * `{% for item in line_items %}`), printed to PDF by headless Chromium with the page's print CSS
 * (`@page` size and margins, page breaks).
 *
 * - Values are HTML-escaped unless a filter says otherwise (`{{ note | raw }}`). A list is given as
 *   a string holding a JSON array, as for an XML template's `<each>`.
 * - Nothing is fetched from the network: the page is served from a private origin that answers
 *   the template's own assets (images, CSS, fonts uploaded with it) and refuses everything else; a
 *   refused address becomes a warning.
 * - Liquid reads no files: `include`, `render` and `layout` are refused at upload, and the engine
 *   has no file system to read from at render either. Filling is bounded (Liquid's own render time
 *   and memory limits, and the render thread it runs on).
 * - Scripts do not run unless HTML_SCRIPTS=1.
 * - Chromium prints in a sandbox (sandbox.ts). A browser is started when the first HTML template
 *   renders and kept warm; a render over its time or memory budget stops its browser, and the next
 *   render starts another.
 */
import { presetNamed, type PresetName } from './presets';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Liquid } from 'liquidjs';
import type { BrowserContext, Page } from 'playwright-core';
import { TemplateError } from '../errors';
import { requireChromium } from './chromium';
import type { AssetResolver } from './compile';
import { checkImagePixels } from './images';
import { renderLimits, RenderLimitError } from './limits';
import { notStarted, programFiles, sandboxed, sandboxInUse, shellQuote } from './sandbox';
import { Slots } from './slots';
import { scopeOf } from './values';
import { childrenWith, treeMemory, watchMemory } from './watch';

export interface HtmlTemplate {
  kind: 'html';
  name: string;
  /** The postcard size it names (its `paperlink-postcard` meta tag). */
  postcard?: PresetName;
  /** The variables it reads (the first segment of each), in order of first use. */
  variables: string[];
  /** `{{ name | default: "…" }}`: the text a variable takes when it is not given. */
  defaults: Record<string, string>;
  source: string;
  /** Its images, CSS and fonts, by the relative path it names them with. */
  assets: Map<string, Uint8Array>;
}

/** Whether text is an HTML document (rather than an XML layout template). */
export function isHtml(text: string): boolean {
  return /^\s*(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html)[\s>]/i.test(text.replace(/^\uFEFF/, ''));
}

/** The Liquid engine, made by the first HTML template (liquidjs is not loaded by threads that never fill one). */
let engine: Liquid | undefined;
function liquid(): Liquid {
  if (engine) return engine;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not with this module
  const { Liquid } = require('liquidjs') as typeof import('liquidjs');
  // `templates: {}`: an empty in-memory file system, so no tag can read a file of the server
  engine = new Liquid({ outputEscape: 'escape', cache: false, templates: {}, memoryLimit: LIQUID_MEMORY });
  engine.registerFilter('money', (value: unknown, currency = 'USD', locale = 'en-US') =>
    new Intl.NumberFormat(String(locale), { style: 'currency', currency: String(currency) }).format(Number(value)),
  );
  engine.registerFilter('number', (value: unknown, digits = 0, locale = 'en-US') =>
    new Intl.NumberFormat(String(locale), {
      minimumFractionDigits: Number(digits),
      maximumFractionDigits: Number(digits),
    }).format(Number(value)),
  );
  return engine;
}

/**
 * Liquid's allocation budget for one render, in its own units (characters of strings it builds,
 * items of ranges and arrays): far above any real document, far below what stops a thread.
 */
const LIQUID_MEMORY = 50_000_000;
/** Tags that read another template file: an HTML template is one file. */
const FILE_TAGS = new Set(['include', 'render', 'layout']);

const DEFAULT = /\{\{-?\s*([A-Za-z_][\w]*)\s*\|\s*default:\s*(?:"([^"]*)"|'([^']*)')\s*-?\}\}/g;
/**
 * Relative addresses the printed page loads: src="…", a <link>'s href="…" (a stylesheet, a font),
 * url(…). A link's href (<a href="terms.html">) is not loaded, so it names no asset.
 */
const REFERENCES =
  /(?:(?<![\w-])src|<link\b[^>]*?\shref)\s*=\s*["']([^"'#?]+)[^"']*["']|url\(\s*["']?([^"')#?]+)[^"')]*["']?\s*\)/gi;

/** Parses the template, lists its variables and reads the assets it names. */
export async function compileHtml(
  source: string,
  options: { name?: string; assets?: AssetResolver },
): Promise<HtmlTemplate> {
  let parsed;
  try {
    parsed = liquid().parse(source);
  } catch (err) {
    throw new TemplateError(`The Liquid in this HTML template does not parse: ${(err as Error).message}`);
  }
  for (const tag of tagsOf(parsed))
    if (FILE_TAGS.has(tag))
      throw new TemplateError(
        `An HTML template cannot {% ${tag} %} another file: it is one file, with only its images, CSS and fonts beside it. Put the markup into the template itself.`,
      );
  const variables = await liquid().globalVariables(parsed);
  const defaults: Record<string, string> = {};
  for (const m of source.matchAll(DEFAULT)) defaults[m[1]] ??= m[2] ?? m[3] ?? '';
  const assets = new Map<string, Uint8Array>();
  for (const m of source.matchAll(REFERENCES)) {
    const ref = (m[1] ?? m[2]).trim();
    if (!ref || /^[a-z][a-z0-9+.-]*:/i.test(ref) || ref.startsWith('//') || ref.includes('{')) continue;
    const path = ref.replace(/^\.?\//, '');
    const bytes = options.assets ? await options.assets(path) : undefined;
    if (bytes) assets.set(path, bytes);
  }
  checkImagePixels(assets, source);
  const title = /<title>([^<]*)<\/title>/i.exec(source)?.[1]?.trim();
  const postcard = postcardOf(source);
  return {
    kind: 'html',
    name: options.name ?? (title || 'HTML template'),
    variables,
    defaults,
    source,
    assets,
    ...(postcard && { postcard }),
  };
}

/** The postcard size an HTML template names: `<meta name="paperlink-postcard" content="4x6">`. */
function postcardOf(source: string): PresetName | undefined {
  const meta = /<meta\b[^>]*\bname=["']paperlink-postcard["'][^>]*>/i.exec(source)?.[0];
  if (!meta) return undefined;
  const size = /\bcontent=["']([^"']*)["']/i.exec(meta)?.[1] ?? '';
  return presetNamed(size, `<meta name="paperlink-postcard" content="${size}">`);
}

/** Every tag name in parsed Liquid, nested ones included (a tag's children are in its own fields). */
function tagsOf(nodes: unknown): string[] {
  const names: string[] = [];
  const seen = new Set<unknown>();
  const walk = (node: unknown, depth: number) => {
    if (node === null || typeof node !== 'object' || seen.has(node) || depth > 200) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const n of node) walk(n, depth + 1);
      return;
    }
    const { name, token } = node as { name?: unknown; token?: unknown };
    if (typeof name === 'string' && token && typeof token === 'object') names.push(name);
    for (const [key, value] of Object.entries(node)) if (key !== 'liquid' && key !== 'token') walk(value, depth + 1);
  };
  walk(nodes, 0);
  return names;
}

/** A filled HTML template: the page, and its running header and footer when it has them. */
export interface FilledHtml {
  html: string;
  header?: string;
  footer?: string;
}

/** Fills the template's Liquid, within the time budget and Liquid's memory limit. */
export async function fillHtml(
  template: HtmlTemplate,
  values: Record<string, string>,
  options: { timeoutMs: number },
): Promise<FilledHtml> {
  let html: string;
  try {
    html = (await liquid().parseAndRender(template.source, scopeOf(values), {
      renderLimit: options.timeoutMs,
    })) as string;
  } catch (err) {
    const message = (err as Error).message ?? '';
    if (/template render limit exceeded/.test(message))
      throw new RenderLimitError(
        'render_time_ms',
        `The HTML template's Liquid did not finish within ${options.timeoutMs} ms. Make its loops smaller, or raise RENDER_TIMEOUT_MS.`,
      );
    if (/memory alloc limit exceeded/.test(message))
      throw new RenderLimitError(
        'render_memory_mb',
        "The HTML template's Liquid built more text than one document may hold. Make its loops smaller.",
      );
    throw new TemplateError(`The HTML template could not be filled: ${message}`);
  }
  checkImagePixels([], html);
  // running header and footer: <template data-paperlink="header|footer">, printed in the margins
  const part = (name: string) =>
    new RegExp(`<template[^>]*\\bdata-paperlink=["']${name}["'][^>]*>([\\s\\S]*?)</template>`, 'i').exec(html)?.[1];
  return { html, header: part('header'), footer: part('footer') };
}

export interface HtmlPrintOptions {
  timeoutMs: number;
  warnings?: { code: string; message: string }[];
}

const ORIGIN = 'https://template.paperlink.invalid/';

/** How a filled page is printed: its @page size and backgrounds, tagged, its running header and footer in the margins. */
export function pdfOptions({ header, footer }: FilledHtml) {
  return {
    preferCSSPageSize: true,
    printBackground: true,
    // tagged: the page's structure (headings, paragraphs, tables, images' alt text) for screen readers
    tagged: true,
    outline: true,
    displayHeaderFooter: header !== undefined || footer !== undefined,
    headerTemplate: header ?? '<span></span>',
    footerTemplate: footer ?? '<span></span>',
  };
}
let renders = 0;

/** Prints a filled page to PDF, with the template's own files beside it and nothing else. */
export async function printHtml(
  filled: FilledHtml,
  assets: Map<string, Uint8Array>,
  options: HtmlPrintOptions,
): Promise<Uint8Array> {
  const { html } = filled;
  const refused = new Set<string>();
  // each render at an address of its own: nothing one template's page loaded is another's
  const base = `${ORIGIN}${++renders}/`;
  const pdf = await printer.print({ base, html, assets, refused }, options.timeoutMs, (page) =>
    page.pdf(pdfOptions(filled)),
  );
  for (const url of refused)
    options.warnings?.push({
      code: 'resource_blocked',
      message: `${url} was not fetched: an HTML template uses only the files uploaded with it.`,
    });
  return new Uint8Array(pdf);
}

const TYPES: Record<string, string> = {
  css: 'text/css',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  webp: 'image/webp',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
};
const typeOf = (url: string) => TYPES[/\.(\w+)$/.exec(url)?.[1]?.toLowerCase() ?? ''] ?? 'application/octet-stream';

interface Job {
  base: string;
  html: string;
  assets: Map<string, Uint8Array>;
  refused: Set<string>;
}

/**
 * What a browser may gain between documents over what it held once started, with its first page
 * open and no document yet, all its processes together (HTML_BROWSER_MEMORY_MB, default 100; as
 * watch.ts measures it). Chromium's page keeps some of what each document used (its renderer grows
 * by one to two MB a letter, more with a running header or footer), so a browser found over it gets
 * a new page before its next document: a new renderer process, at a few tens of ms of CPU where a
 * new browser costs several times that. A browser still over it at the next check (its own
 * processes grew) is replaced, as one that has printed RENDERS_PER_BROWSER documents is. Counted
 * from the browser's own footprint, not from zero: a desktop build (Debian's `chromium`) holds 190
 * to 270 MB before any document, where a headless shell holds about 110, and a budget counted from
 * zero replaced the desktop build every 20 letters. Memory is measured when the browser has started
 * and every MEMORY_CHECK_EVERY documents (reading it costs about a millisecond).
 */
const keepBytes = () => (Number(process.env.HTML_BROWSER_MEMORY_MB) || 100) * MB;
export const MEMORY_CHECK_EVERY = 10;
/** Documents one browser prints before it is replaced by a fresh one. */
export const RENDERS_PER_BROWSER = 1000;

/**
 * No connection out of the browser, whatever the page asks for. The route below answers the
 * page's own requests, but Chromium opens some connections no route sees: a preconnect to a
 * stylesheet's host, a WebSocket, WebRTC. Without the sandbox's empty network (where bubblewrap
 * does not work) those would reach the server's network, so every connection must go through a
 * proxy that cannot be reached: one whose name resolves to nothing, with no host resolved at all
 * and loopback not exempt. The routed requests are answered before any of this is asked.
 */
const NO_NETWORK = [
  '--proxy-server=http://no-network.invalid:9',
  '--proxy-bypass-list=<-loopback>',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/**
 * One headless Chromium with one page at a time, printing one document at a time: in the sandbox
 * (sandbox.ts) with Chromium's own sandbox on inside it, or, without bubblewrap, with Chromium's
 * sandbox on where this process is not root. Its memory, all its processes counted, is watched
 * while it prints.
 */
class Browser {
  readonly ready: Promise<BrowserContext>;
  /** The page documents are written into: replaced by renew(). */
  page: Promise<Page>;
  /** The document it is printing: the route answers from it. */
  job?: Job;
  renders = 0;
  /** Pages opened so far. */
  private pages = 0;
  /** Whether its page was renewed at the last memory check. */
  renewed = false;
  /** What it held with its first page open, before any document, all its processes together. */
  footprint?: number;
  gone = false;
  /** The root of its processes, once started. */
  pid?: number;
  private dir?: string;

  /** `opened` is told of each page it opens. */
  constructor(private readonly opened: () => void) {
    this.ready = this.launch();
    this.ready.catch(() => this.close());
    this.page = this.ready.then((context) => this.open(context));
    // what it holds with its first page open, before any document (the first print waits on the page after this)
    this.page.then(
      () => {
        if (this.pid) this.footprint = treeMemory(this.pid);
      },
      () => undefined,
    );
  }

  /** The page the browser started with, the first time; a new one after that. */
  private async open(context: BrowserContext): Promise<Page> {
    this.pages++;
    this.opened();
    return (this.pages === 1 && context.pages()[0]) || context.newPage();
  }

  /** A new page (a new renderer process) for the next document; the old one is closed. */
  renew(): void {
    const old = this.page;
    this.page = this.ready.then(async (context) => {
      const page = await this.open(context);
      await (await old).close();
      return page;
    });
    this.page.catch(() => undefined);
  }

  private async launch() {
    const executable = await requireChromium();
    // loaded here, not at the top: render threads load this module and count nothing
    (await import('../metrics')).rendererStarts.inc({ renderer: 'chromium' });
    const { chromium } = await import('playwright-core');
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-chromium-'));
    const profile = path.join(this.dir, 'profile');
    fs.mkdirSync(profile);
    let executablePath = executable;
    const sandbox = sandboxInUse();
    if (sandbox) {
      // playwright starts the executable it is given: a script that starts Chromium in the sandbox
      const { command, args } = sandboxed(executable, [], {
        writable: [this.dir],
        readable: [programFiles(executable)],
      });
      executablePath = path.join(this.dir, 'chromium.sh');
      fs.writeFileSync(executablePath, `#!/bin/sh\nexec ${[command, ...args].map(shellQuote).join(' ')} "$@"\n`, {
        mode: 0o700,
      });
    }
    const launch = (chromiumSandbox: boolean) =>
      chromium.launchPersistentContext(profile, {
        executablePath,
        chromiumSandbox,
        javaScriptEnabled: process.env.HTML_SCRIPTS === '1',
        args: [
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--disable-quic',
          ...NO_NETWORK,
        ],
      });
    // Chromium's own sandbox: always inside bubblewrap; outside it, where this process is not root
    // and the machine lets Chromium make its namespaces (a container may not: then without it)
    const own = sandbox || process.getuid?.() !== 0;
    const context = await launch(own)
      .catch((err: unknown) => {
        if (!own || sandbox) throw err;
        return launch(false);
      })
      .catch((err: unknown) => {
        throw notStarted(
          'Chromium',
          new Error(`Chromium at ${executable} did not start${sandbox ? ' in the sandbox' : ''}`, { cause: err }),
        );
      });
    context.on('close', () => {
      this.gone = true;
    });
    await context.route('**/*', async (route) => {
      const job = this.job;
      const url = route.request().url();
      const bytes =
        job && url.startsWith(job.base) ? job.assets.get(decodeURIComponent(url.slice(job.base.length))) : undefined;
      if (bytes) return route.fulfill({ body: Buffer.from(bytes), contentType: typeOf(url), headers: ASSET_HEADERS });
      job?.refused.add(url);
      return route.abort('blockedbyclient');
    });
    // the process playwright started (the browser, or the sandbox around it): the root of its tree
    this.pid = childrenWith(profile)[0];
    return context;
  }

  private closing?: Promise<void>;

  /**
   * Ends the browser with every process of it and removes its folder: `now` kills it at once (a
   * document over its budget), otherwise it is closed, and killed only if it does not answer.
   */
  close(now = false): Promise<void> {
    this.gone = true;
    return (this.closing ??= this.end(now));
  }

  private async end(now: boolean): Promise<void> {
    const context = await this.ready.catch(() => undefined);
    if (now && this.pid) kill(this.pid);
    const closed = await Promise.race([
      context?.close().then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 5_000).unref()),
    ]).catch(() => false);
    if (!closed && this.pid) kill(this.pid);
    // a browser's last helper processes may still be writing its profile as the first one ends:
    // the removal is tried again rather than failing the stop over a folder in the system's tmp
    if (this.dir) await fs.promises.rm(this.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
}

/**
 * The page with a <base> saying where its relative addresses are served from (a new address per
 * document: nothing one document loaded is another's), put right after its doctype: the parser
 * puts it into the head it makes, ahead of any <base> of the template's own, and the page keeps
 * its mode and its own <html> and <head> attributes.
 */
export function withBase(html: string, base: string): string {
  const at = /^\s*(?:<!--[\s\S]*?-->\s*)*<!doctype[^>]*>/i.exec(html)?.[0].length ?? 0;
  return `${html.slice(0, at)}<base href="${base}">${html.slice(at)}`;
}

/** Ends a browser's first process: the sandbox takes its tree with it, an unsandboxed browser's children see their parent go. */
function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * The browsers of this process: at most HTML_PAGES print at once, each in a browser of its own
 * (so a document over the memory budget stops only its own browser), started when first needed and
 * kept warm for the next document, replaced after RENDERS_PER_BROWSER documents.
 */
class Printer {
  private idle: Browser[] = [];
  private readonly all = new Set<Browser>();
  private readonly slots = new Slots(size);
  /** Browsers started so far. */
  launched = 0;
  /** Pages opened so far, by every browser. */
  pagesOpened = 0;

  /** Prints the job's page with `print`, within the time and memory budgets. */
  async print(job: Job, timeoutMs: number, print: (page: Page) => Promise<Buffer>): Promise<Buffer> {
    await this.slots.take();
    let browser: Browser | undefined;
    try {
      browser = this.take();
      const page = await browser.page;
      const used = browser;
      const { pid } = used;
      let over: 'time' | 'memory' | undefined;
      const stop = (why: 'time' | 'memory') => {
        over ??= why;
        void used.close(true);
      };
      const timer = setTimeout(() => stop('time'), timeoutMs);
      const unwatch = pid ? watchMemory(pid, printMemoryBytes(), () => stop('memory')) : () => undefined;
      used.job = job;
      try {
        // written into the kept page (a navigation per document costs more than printing it)
        await page.setContent(withBase(job.html, job.base), { waitUntil: 'load', timeout: timeoutMs });
        // and printed once its web fonts are in (the load event does not wait for a font a stylesheet names)
        await page.evaluate('document.fonts.ready.then(() => undefined)');
        const pdf = await print(page);
        if (over) throw new Error(over);
        return pdf;
      } catch (err) {
        if (over === 'memory')
          throw new RenderLimitError(
            'render_memory_mb',
            `Chromium needed more than ${printMemoryBytes() / MB} MB to print this HTML template and was stopped. Make it smaller (fewer rows, smaller images), or raise RENDER_PROCESS_MEMORY_MB.`,
          );
        if (over === 'time' || (err as Error).name === 'TimeoutError')
          throw new RenderLimitError(
            'render_time_ms',
            `The HTML template did not print within ${timeoutMs} ms. Make it simpler, or raise RENDER_TIMEOUT_MS.`,
          );
        throw err;
      } finally {
        clearTimeout(timer);
        unwatch();
        used.job = undefined;
        // a stopped browser is gone, with its memory, before the render answers
        if (over) await used.close(true);
      }
    } finally {
      if (browser) this.giveBack(browser);
      this.slots.release();
    }
  }

  /** A warm browser, or a new one; one that went away meanwhile (it crashed) is cleared up. */
  private take(): Browser {
    for (let kept = this.idle.pop(); kept; kept = this.idle.pop()) {
      if (!kept.gone) return kept;
      this.retire(kept);
    }
    const browser = new Browser(() => this.pagesOpened++);
    this.launched++;
    this.all.add(browser);
    return browser;
  }

  /**
   * Keeps a browser warm for the next document (with a new page when it holds more than it may
   * keep), or ends it: stopped, done its share of documents, or still holding too much with a
   * page renewed at the last check.
   */
  private giveBack(browser: Browser): void {
    browser.renders++;
    let keep = !browser.gone && browser.renders < RENDERS_PER_BROWSER && this.idle.length < size();
    if (keep && browser.renders % MEMORY_CHECK_EVERY === 0 && browser.pid) {
      const over = treeMemory(browser.pid) - (browser.footprint ?? 0) > keepBytes();
      if (over && browser.renewed) keep = false;
      else if (over) browser.renew();
      browser.renewed = over;
    }
    if (keep) this.idle.push(browser);
    else this.retire(browser);
  }

  private retire(browser: Browser): void {
    this.all.delete(browser);
    void browser.close();
  }

  /** Ends every browser (the next document starts one again). */
  async close(): Promise<void> {
    const all = [...this.all];
    this.all.clear();
    this.idle = [];
    await Promise.all(all.map((b) => b.close()));
  }
}

const MB = 1024 * 1024;
/**
 * An asset is never kept for another document, and may be read by the page (web fonts are fetched
 * with CORS, and the page's own origin is not the assets' one).
 */
const ASSET_HEADERS = { 'cache-control': 'no-store', 'access-control-allow-origin': '*' };
/** Documents printing at once, each in a browser of its own: HTML_PAGES, default 2. */
const size = () => Math.max(1, Number(process.env.HTML_PAGES) || 2);
/** The most a browser with its document may hold: RENDER_PROCESS_MEMORY_MB. */
const printMemoryBytes = () => renderLimits().processMemoryMb * MB;

export const printer = new Printer();
