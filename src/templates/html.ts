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
 * - Scripts do not run unless HTML_SCRIPTS=1.
 * - One browser is started when the first HTML template renders and kept warm; a render that
 *   exceeds its time budget is stopped with its page, a browser that stops answering is replaced.
 */
import fs from 'node:fs';
import type { Liquid } from 'liquidjs';
import { PDFDocument } from 'pdf-lib';
import type { BrowserContext, Page } from 'playwright-core';
import { TemplateError, ValidationError } from '../errors';
import type { AssetResolver } from './compile';
import { checkLimit, RenderLimitError } from './limits';
import { Slots } from './slots';
import { scopeOf } from './values';

export interface HtmlTemplate {
  kind: 'html';
  name: string;
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
  const { Liquid } = require('liquidjs') as typeof import('liquidjs');
  engine = new Liquid({ outputEscape: 'escape', cache: false });
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

const DEFAULT = /\{\{-?\s*([A-Za-z_][\w]*)\s*\|\s*default:\s*(?:"([^"]*)"|'([^']*)')\s*-?\}\}/g;
/** Relative addresses the page names: src="…", href="…", url(…). */
const REFERENCES = /(?:src|href)\s*=\s*["']([^"'#?]+)[^"']*["']|url\(\s*["']?([^"')#?]+)[^"')]*["']?\s*\)/gi;

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
  const title = /<title>([^<]*)<\/title>/i.exec(source)?.[1]?.trim();
  return { kind: 'html', name: options.name ?? (title || 'HTML template'), variables, defaults, source, assets };
}

export interface HtmlRenderOptions {
  timeoutMs: number;
  warnings?: { code: string; message: string }[];
}

const ORIGIN = 'https://template.paperlink.invalid/';
let renders = 0;

/** Fills the template and prints it to PDF. */
export async function renderHtml(
  template: HtmlTemplate,
  values: Record<string, string>,
  options: HtmlRenderOptions,
): Promise<Uint8Array> {
  const html = await liquid().parseAndRender(template.source, scopeOf(values));
  const refused = new Set<string>();
  // each render at an address of its own: nothing one template's page loaded is another's
  const base = `${ORIGIN}${++renders}/`;
  const page = await printer.page();
  printer.jobs.set(page, { base, html, assets: template.assets, refused });
  let timedOut = false;
  const stop = setTimeout(() => {
    timedOut = true;
    void page.close().catch(() => undefined);
  }, options.timeoutMs);
  let reusable = false;
  try {
    await page.goto(base, { waitUntil: 'load', timeout: options.timeoutMs });
    // running header and footer: <template data-paperlink="header|footer">, printed in the margins
    const part = (name: string) =>
      new RegExp(`<template[^>]*\\bdata-paperlink=["']${name}["'][^>]*>([\\s\\S]*?)</template>`, 'i').exec(html)?.[1];
    const header = part('header');
    const footer = part('footer');
    const pdf = await page.pdf({
      preferCSSPageSize: true,
      printBackground: true,
      displayHeaderFooter: header !== undefined || footer !== undefined,
      headerTemplate: header ?? '<span></span>',
      footerTemplate: footer ?? '<span></span>',
    });
    reusable = !timedOut;
    const pages = (await PDFDocument.load(pdf, { updateMetadata: false })).getPageCount();
    checkLimit('pages', pages, `The document (${pages} pages)`);
    for (const url of refused)
      options.warnings?.push({
        code: 'resource_blocked',
        message: `${url} was not fetched: an HTML template uses only the files uploaded with it.`,
      });
    return new Uint8Array(pdf);
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    if (timedOut || (err as Error).name === 'TimeoutError')
      throw new RenderLimitError(
        'render_time',
        `The HTML template did not print within ${options.timeoutMs} ms. Make it simpler, or raise RENDER_TIMEOUT_MS.`,
      );
    throw err;
  } finally {
    clearTimeout(stop);
    printer.jobs.delete(page);
    await printer.release(page, reusable);
  }
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

/** Where Chromium is: CHROMIUM_PATH, Debian's package, or the one inside the npm package @sparticuz/chromium. */
export async function chromiumPath(): Promise<string | undefined> {
  const given = process.env.CHROMIUM_PATH;
  if (given) return fs.existsSync(given) ? given : undefined;
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'])
    if (fs.existsSync(p)) return p;
  try {
    const packaged = (await import('@sparticuz/chromium')).default;
    return await packaged.executablePath();
  } catch {
    return undefined;
  }
}

/** Chromium's path, or `422 format_unavailable` saying how to install it. */
export async function requireChromium(): Promise<string> {
  const found = await chromiumPath();
  if (found) return found;
  throw new ValidationError(
    CHROMIUM_MISSING,
    [{ field: 'format', message: 'HTML templates need Chromium', code: 'format_unavailable' }],
    'format_unavailable',
  );
}

export const CHROMIUM_MISSING =
  'HTML templates are printed by Chromium, which this server does not have. Install it (Debian: apt-get install chromium; or npm install @sparticuz/chromium) or set CHROMIUM_PATH, then restart.';

interface Job {
  base: string;
  html: string;
  assets: Map<string, Uint8Array>;
  refused: Set<string>;
}

/**
 * The one warm browser of this process, with a few pages kept open between renders (a new page
 * would start a renderer process each time). At most HTML_PAGES print at once; more wait.
 */
class Printer {
  private started?: Promise<BrowserContext>;
  private idle: Page[] = [];
  /** What each page is printing: its route handler answers from it. */
  readonly jobs = new Map<Page, Job>();

  private context(): Promise<BrowserContext> {
    this.started ??= this.launch().catch((err) => {
      this.started = undefined;
      throw err;
    });
    return this.started;
  }

  private async launch(): Promise<BrowserContext> {
    const executablePath = await requireChromium();
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
    });
    // a browser that went away is started again by the next render
    browser.on('disconnected', () => {
      this.started = undefined;
      this.idle = [];
    });
    return browser.newContext({ javaScriptEnabled: process.env.HTML_SCRIPTS === '1' });
  }

  private readonly slots = new Slots(size);

  /** A page to print on, once one of the HTML_PAGES is free: one kept from an earlier render, or a new one. */
  async page(): Promise<Page> {
    await this.slots.take();
    try {
      return await this.open();
    } catch (err) {
      this.slots.release();
      throw err;
    }
  }

  private async open(): Promise<Page> {
    const kept = this.idle.pop();
    if (kept && !kept.isClosed()) return kept;
    const page = await (await this.context()).newPage();
    await page.route('**/*', async (route) => {
      const job = this.jobs.get(page);
      const url = route.request().url();
      if (job && url === job.base)
        return route.fulfill({ contentType: 'text/html; charset=utf-8', body: job.html, headers: NO_STORE });
      const bytes =
        job && url.startsWith(job.base) ? job.assets.get(decodeURIComponent(url.slice(job.base.length))) : undefined;
      if (bytes) return route.fulfill({ body: Buffer.from(bytes), contentType: typeOf(url), headers: NO_STORE });
      job?.refused.add(url);
      return route.abort('blockedbyclient');
    });
    return page;
  }

  /** Keeps a page that printed for the next render, or closes it (a page stopped mid-render is not kept). */
  async release(page: Page, reusable: boolean): Promise<void> {
    try {
      await this.keepOrClose(page, reusable);
    } finally {
      this.slots.release();
    }
  }

  private async keepOrClose(page: Page, reusable: boolean): Promise<void> {
    if (reusable && !page.isClosed() && this.idle.length < size()) {
      this.idle.push(page);
      return;
    }
    // a page busy in a script may not close: then the browser goes, and the next render starts another
    const closed = await Promise.race([
      page.close().then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), 5_000).unref()),
    ]);
    if (!closed) await this.close();
  }

  async close(): Promise<void> {
    const started = this.started;
    this.started = undefined;
    this.idle = [];
    const context = await started?.catch(() => undefined);
    // closing a browser kills its processes; one that does not answer that is left to exit with us
    await Promise.race([context?.browser()?.close(), new Promise((r) => setTimeout(r, 5_000).unref())]).catch(
      () => undefined,
    );
  }
}

const NO_STORE = { 'cache-control': 'no-store' };
/** Pages printing at once (and kept open between renders): HTML_PAGES, default 2. */
const size = () => Math.max(1, Number(process.env.HTML_PAGES) || 2);

export const printer = new Printer();
