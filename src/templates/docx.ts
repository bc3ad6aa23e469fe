/**
 * Word templates: a .docx with docxtemplater merge fields (`{first_name}`, loops
 * `{#items}…{/items}`, conditions `{#paid}…{/paid}` and `{^paid}…{/paid}`), filled in memory, then
 * converted to PDF by LibreOffice.
 *
 * - A list is given as a string holding a JSON array, as for the other formats. A condition given
 *   as text is false when it is "", "false", "0" or "no".
 * - What LibreOffice would fetch, read or run from outside the document is refused at upload and
 *   again before each conversion (docxparts.ts), and LibreOffice runs in the sandbox (sandbox.ts).
 * - One LibreOffice is started when the first Word template renders, with a profile directory of
 *   its own, and kept warm: documents are converted one at a time through a small Python UNO
 *   bridge (Debian's python3-uno), not by starting `soffice` once per document. A conversion over
 *   its time or memory budget stops LibreOffice; the next render starts another.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import zlib from 'node:zlib';
import type Docxtemplater from 'docxtemplater';
import type PizZip from 'pizzip';
import { InvalidValueError, TemplateError, ValidationError } from '../errors';
import { checkDocxParts } from './docxparts';
import { checkImagePixels } from './images';
import { renderLimits, RenderLimitError } from './limits';
import type { Conformance, PdfMetadata } from './standards';
import { notStarted, programFiles, sandboxed, sandboxInUse } from './sandbox';
import { asList, scopeOf } from './values';
import { postcardOfKeywords, type PresetName } from './presets';
import { watchMemory } from './watch';

export interface DocxTemplate {
  kind: 'docx';
  name: string;
  /** The tags it reads outside any loop, in order of first use. */
  variables: string[];
  /** Word templates have no defaults: every variable is required. */
  defaults: Record<string, string>;
  bytes: Uint8Array;
  /** The postcard size its Keywords name (`paperlink-postcard:4x6`, presets.ts). */
  postcard?: PresetName;
}

/** Whether bytes are a ZIP archive (as .docx files are). */
export function isZip(bytes: Uint8Array): boolean {
  return bytes.length > 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

/**
 * docxtemplater and pizzip, loaded by the first Word template: together about 19 MB of memory in
 * every thread that loads them, and the render threads (which never fill a Word template) load
 * this module.
 */
let libraries: { Docxtemplater: typeof Docxtemplater; PizZip: typeof PizZip } | undefined;
function lib() {
  return (libraries ??= {
    // loaded on first use, not when this module is
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    Docxtemplater: require('docxtemplater') as typeof Docxtemplater,
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    PizZip: require('pizzip') as typeof PizZip,
  });
}

function open(bytes: Uint8Array): PizZip {
  const { PizZip } = lib();
  let zip: PizZip;
  try {
    zip = new PizZip(bytes);
  } catch {
    throw new TemplateError('The file is not a readable ZIP archive. Save the template from Word as .docx.');
  }
  if (!zip.file('word/document.xml'))
    throw new TemplateError('The archive is not a Word document (.docx). Save the template from Word as .docx.');
  return zip;
}

/** A condition or a loop given as text: a JSON array is a list, "", "false", "0" and "no" are false. */
function section(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const list = asList(value);
  if (list) return list;
  return !['', 'false', '0', 'no'].includes(value.trim().toLowerCase());
}

function templater(zip: PizZip): Docxtemplater {
  try {
    return new (lib().Docxtemplater)(zip, {
      paragraphLoop: true,
      linebreaks: true,
      // its errors are ours to report, not to be printed to the console with their stacks
      errorLogging: false,
      // a field of a list item that the item lacks prints nothing; required variables are checked before
      nullGetter: () => '',
      parser: (tag: string, meta?: { tag?: { module?: string } }) => {
        const isSection = meta?.tag?.module === 'loop';
        return {
          get: (scope: unknown) => {
            const value =
              tag === '.'
                ? scope
                : scope !== null && typeof scope === 'object' && Object.hasOwn(scope, tag)
                  ? (scope as Record<string, unknown>)[tag]
                  : undefined;
            return isSection ? section(value) : value;
          },
        };
      },
    });
  } catch (err) {
    throw new TemplateError(`The merge fields of this Word template do not parse: ${explain(err)}`);
  }
}

interface DocxError {
  message?: string;
  properties?: { id?: string; xtag?: string; explanation?: string; errors?: DocxError[] };
}

/** docxtemplater's errors: several at once in one error, or the one. */
function errorsOf(err: unknown): DocxError[] {
  const e = err as DocxError;
  return e.properties?.errors ?? [e];
}

/** docxtemplater's errors as one sentence, each said once. */
function explain(err: unknown): string {
  return [...new Set(errorsOf(err).map((e) => e.properties?.explanation ?? e.message))].join('; ');
}

/** What a .docx may unpack to, all its parts together: a Word document is rarely over a few MB. */
export const MAX_UNPACKED = 100 * 1024 * 1024;

/**
 * Refuses an archive that unpacks to more than MAX_UNPACKED (a "zip bomb" packs gigabytes into a
 * few MB). Each part is inflated with a cap rather than trusting the sizes the archive declares.
 */
function checkUnpacked(zip: PizZip): void {
  let total = 0;
  for (const file of Object.values(zip.files)) {
    const data = (file as unknown as { _data?: PackedPart })._data;
    if (!data) continue;
    const packed = Buffer.from(data.getCompressedContent());
    try {
      total +=
        data.compressionMethod === DEFLATE
          ? zlib.inflateRawSync(packed, { maxOutputLength: MAX_UNPACKED - total + 1 }).length
          : packed.length;
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE')
        throw new TemplateError(`The part ${file.name} of the .docx is damaged. Save the template from Word again.`);
      total = MAX_UNPACKED + 1;
    }
    if (total > MAX_UNPACKED)
      throw new TemplateError(
        `The .docx unpacks to more than ${MAX_UNPACKED / 1024 / 1024} MB. Make the document smaller (compress its pictures in Word).`,
      );
  }
}

interface PackedPart {
  compressionMethod: string;
  getCompressedContent(): Uint8Array;
}
const DEFLATE = '\x08\x00';

/**
 * The fields outside loops, in order of first use, from the parsed parts (the document, its headers
 * and footers, …). docxtemplater's own InspectModule would do it but needs lodash, which
 * docxtemplater does not declare.
 */
function fieldsOf(doc: Docxtemplater): string[] {
  const compiled = (doc as unknown as { compiled: Record<string, { postparsed: { type: string; value: string }[] }> })
    .compiled;
  const names = new Set<string>();
  for (const part of Object.values(compiled))
    for (const tag of part.postparsed) if (tag.type === 'placeholder' && tag.value !== '.') names.add(tag.value);
  return [...names];
}

/** Reads a .docx, refuses what would reach outside it (docxparts.ts) and lists its merge fields. */
export function compileDocx(bytes: Uint8Array, options: { name?: string }): DocxTemplate {
  const zip = open(bytes);
  checkUnpacked(zip);
  checkDocxParts(zip);
  checkImagePixels(
    Object.values(zip.files)
      .filter((f) => /^word\/media\//.test(f.name))
      .map((f): [string, Uint8Array] => [f.name, f.asUint8Array()]),
  );
  const variables = fieldsOf(templater(zip));
  const core = zip.file('docProps/core.xml')?.asText() ?? '';
  const title = /<dc:title>([^<]*)<\/dc:title>/.exec(core)?.[1]?.trim();
  const postcard = postcardOfKeywords(/<cp:keywords>([^<]*)<\/cp:keywords>/.exec(core)?.[1]);
  return {
    kind: 'docx',
    name: options.name ?? (title || 'Word template'),
    variables,
    defaults: {},
    bytes,
    ...(postcard && { postcard }),
  };
}

/**
 * Fills the template's fields (in memory), checks the filled document again (a value put in raw
 * with `{@name}` is XML of its own) and returns the .docx that LibreOffice converts.
 */
export function fillDocx(template: DocxTemplate, values: Record<string, string>): Uint8Array {
  const doc = templater(open(template.bytes));
  try {
    doc.render(scopeOf(values));
  } catch (err) {
    // a value holding a character XML cannot (a control character): the value is wrong, not the template
    const bad = errorsOf(err).find((e) => e.properties?.id === 'invalid_xml_characters')?.properties?.xtag;
    if (bad)
      throw new InvalidValueError(
        bad,
        'holds a control character that a Word document cannot hold. Remove it from the value.',
      );
    throw new TemplateError(`The Word template could not be filled: ${explain(err)}`);
  }
  const zip = doc.getZip() as PizZip;
  checkDocxParts(zip);
  // stored, not compressed: it is only written for LibreOffice to read, and pizzip deflates in JavaScript
  return zip.generate({ type: 'uint8array', compression: 'STORE' });
}

/**
 * Has LibreOffice convert a filled .docx to PDF, within the time and memory budgets; to the PDF/A
 * level asked for, by its own export (which embeds fonts, writes the output intent and the XMP
 * metadata). PDF/UA is never asked of it (standards.ts says why).
 */
export function convertDocx(docx: Uint8Array, options: { timeoutMs: number } & Export): Promise<Uint8Array> {
  return converter.convert(docx, options.timeoutMs, { pdfa: options.pdfa, metadata: options.metadata });
}

/** Where LibreOffice and a Python that can talk to it are; undefined when either is missing. */
export interface Office {
  soffice: string;
  python: string;
}

const found = new Map<string, Office | undefined>();

/** LibreOffice (LIBREOFFICE_PATH, or Debian's) and a Python with its UNO module (LIBREOFFICE_PYTHON, or Debian's). */
export function officePaths(): Office | undefined {
  const key = `${process.env.LIBREOFFICE_PATH}\0${process.env.LIBREOFFICE_PYTHON}`;
  if (!found.has(key)) found.set(key, look());
  return found.get(key);
}

function look(): Office | undefined {
  // a path given is the only one tried: it says which installation is meant
  const given = (name: string, fallbacks: string[]) => (process.env[name] ? [process.env[name]] : fallbacks);
  const soffice = given('LIBREOFFICE_PATH', ['/usr/bin/soffice', '/usr/lib/libreoffice/program/soffice']).find((p) =>
    fs.existsSync(p),
  );
  const python = given('LIBREOFFICE_PYTHON', ['/usr/lib/libreoffice/program/python', '/usr/bin/python3']).find(
    (p) => fs.existsSync(p) && spawnSync(p, ['-c', 'import uno'], { stdio: 'ignore' }).status === 0,
  );
  return soffice && python ? { soffice, python } : undefined;
}

export const LIBREOFFICE_MISSING =
  'Word templates are converted to PDF by LibreOffice, which this server does not have. Install it (Debian: apt-get install libreoffice-writer-nogui python3-uno) or set LIBREOFFICE_PATH and LIBREOFFICE_PYTHON, then restart.';

/** LibreOffice's paths, or `422 format_unavailable` saying how to install it. */
export function requireOffice(): Office {
  const office = officePaths();
  if (office) return office;
  throw new ValidationError(
    LIBREOFFICE_MISSING,
    [{ field: 'format', message: 'Word templates need LibreOffice', code: 'format_unavailable' }],
    'format_unavailable',
  );
}

/**
 * The bridge: starts LibreOffice in a process group of its own (and says its pid), connects
 * through its pipe, then converts one document per line of standard input ({"in", "out"}),
 * answering one line each. When its input ends (we closed it, or this process died, even killed)
 * it stops LibreOffice and exits.
 */
const BRIDGE = String.raw`
import json, os, queue, signal, subprocess, sys, threading, time, uno
from com.sun.star.beans import PropertyValue
def say(o): print(json.dumps(o), flush=True)
def prop(name, value):
    p = PropertyValue(); p.Name = name; p.Value = value; return p
soffice, profile, pipe = sys.argv[1:4]
office = subprocess.Popen([soffice, "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
    "-env:UserInstallation=" + uno.systemPathToFileUrl(profile), "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
def stop():
    try: os.killpg(office.pid, signal.SIGKILL)
    except Exception: pass
    os._exit(0)
jobs = queue.Queue()
def read():
    for line in sys.stdin: jobs.put(json.loads(line))
    stop()
threading.Thread(target=read, daemon=True).start()
say({"office": office.pid})
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
deadline = time.time() + 120
while True:
    try:
        ctx = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe); break
    except Exception as e:
        if office.poll() is not None: say({"error": "it exited (%s) before it took connections" % office.returncode}); stop()
        if time.time() > deadline: say({"error": "LibreOffice did not start: %s" % e}); stop()
        time.sleep(0.05)
desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
def alive():
    try: desktop.getCurrentComponent(); return True
    except Exception: return False
say({"ready": True})
while True:
    job = jobs.get()
    try:
        # LibreOffice's own options too: never update links, never run macros (MacroExecMode and UpdateDocMode NEVER/NO = 0)
        doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(job["in"]), "_blank", 0, (prop("Hidden", True), prop("ReadOnly", True), prop("MacroExecutionMode", 0), prop("UpdateDocMode", 0)))
        if doc is None: raise Exception("LibreOffice could not open the document")
        # the request's metadata over the document's own properties (what the PDF's Info and XMP say)
        given = job.get("metadata") or {}
        props = doc.getDocumentProperties()
        if "title" in given: props.Title = given["title"]
        if "author" in given: props.Author = given["author"]
        if "subject" in given: props.Subject = given["subject"]
        if "keywords" in given: props.Keywords = (given["keywords"],)
        # a tagged PDF (its structure for screen readers) with the document's headings as bookmarks
        # SelectPdfVersion: 0 plain, 2 PDF/A-2b, 3 PDF/A-3b
        data = uno.Any("[]com.sun.star.beans.PropertyValue", (prop("UseTaggedPDF", True), prop("ExportBookmarks", True), prop("SelectPdfVersion", int(job.get("pdfa") or 0))))
        try: uno.invoke(doc, "storeToURL", (uno.systemPathToFileUrl(job["out"]), (prop("FilterName", "writer_pdf_Export"), prop("FilterData", data))))
        finally: doc.close(True)
        say({"ok": True})
    except Exception as e:
        # LibreOffice gone (crashed, or killed) is not the document's fault: "stopped" says so
        gone = not alive()
        say({"error": str(e), "stopped": gone})
        if gone: stop()
`;

interface Running {
  /** The bridge, or the sandbox around it (which takes every process in it along when it ends). */
  bridge: ChildProcess;
  /** LibreOffice's process group, once the bridge said it (outside the sandbox). */
  office?: number;
  answers: AsyncIterator<string>;
  dir: string;
}

interface Said {
  office?: number;
  ready?: boolean;
  ok?: boolean;
  error?: string;
  /** LibreOffice itself ended while converting. */
  stopped?: boolean;
}

/** What a conversion exports: the PDF/A level asked for, and the request's metadata over the document's own properties. */
type Export = Pick<Conformance, 'pdfa'> & { metadata?: PdfMetadata };

/** LibreOffice ended while converting: the conversion is tried once more on a fresh one. */
class OfficeStopped extends Error {}

/** The one warm LibreOffice of this process; documents are converted one after another. */
class Converter {
  private running?: Promise<Running>;
  /** The processes of the LibreOffice running or starting, to stop it in either state. */
  private current?: Running;
  private tail: Promise<unknown> = Promise.resolve();
  private count = 0;

  /** Converts a .docx to PDF, after the conversions already asked for. */
  convert(docx: Uint8Array, timeoutMs: number, standard: Export): Promise<Uint8Array> {
    const next = this.tail.then(() => this.run(docx, timeoutMs, standard));
    this.tail = next.catch(() => undefined);
    return next;
  }

  /** Starts LibreOffice if it is not running, and converts; both within the time budget, or LibreOffice is stopped. */
  private async run(docx: Uint8Array, timeoutMs: number, standard: Export): Promise<Uint8Array> {
    let timer: NodeJS.Timeout | undefined;
    let unwatch = () => {};
    const late = new Promise<'time'>((r) => (timer = setTimeout(() => r('time'), timeoutMs)));
    const limitMb = renderLimits().processMemoryMb;
    const overMemory = new Promise<'memory'>((r) => {
      // the bridge, LibreOffice and whatever it started: measured from the bridge down
      void this.start().then(
        (office) =>
          (unwatch = office.bridge.pid
            ? watchMemory(office.bridge.pid, limitMb * 1024 * 1024, () => r('memory'))
            : unwatch),
        () => undefined,
      );
    });
    const job = { over: false };
    try {
      const done = await Promise.race([this.convertNow(docx, job, standard), late, overMemory]);
      if (done instanceof Uint8Array) return done;
      job.over = true;
      await this.close();
      if (done === 'memory')
        throw new RenderLimitError(
          'render_memory_mb',
          `LibreOffice needed more than ${limitMb} MB to convert the Word template and was stopped. Make it smaller (fewer rows, smaller pictures), or raise RENDER_PROCESS_MEMORY_MB.`,
        );
      throw new RenderLimitError(
        'render_time_ms',
        `LibreOffice did not convert the Word template within ${timeoutMs} ms. Make it simpler, or raise RENDER_TIMEOUT_MS.`,
      );
    } finally {
      clearTimeout(timer);
      unwatch();
    }
  }

  /**
   * Converts on the warm LibreOffice. One that ends while converting (it crashed, or was killed) is
   * replaced, and the document converted again on the new one: it fails only if that one ends too.
   * One stopped for this document's budget (`job.over`) is not tried again.
   */
  private async convertNow(docx: Uint8Array, job: { over: boolean }, standard: Export): Promise<Uint8Array> {
    try {
      return await this.convertOnce(docx, standard);
    } catch (err) {
      if (!(err instanceof OfficeStopped) || job.over) throw err;
      try {
        return await this.convertOnce(docx, standard);
      } catch (again) {
        if (!(again instanceof OfficeStopped)) throw again;
        throw new TemplateError(
          `LibreOffice stopped while converting this Word template, twice (${again.message}): something in the document stops it. Open it in Word or LibreOffice and save it again, or simplify it.`,
        );
      }
    }
  }

  private async convertOnce(docx: Uint8Array, standard: Export): Promise<Uint8Array> {
    const office = await this.start();
    const n = ++this.count;
    const input = path.join(office.dir, `${n}.docx`);
    const output = path.join(office.dir, `${n}.pdf`);
    fs.writeFileSync(input, docx);
    try {
      office.bridge.stdin!.write(JSON.stringify({ in: input, out: output, ...standard }) + '\n');
      const answer = await office.answers.next();
      if (answer.done) {
        await this.retire(office);
        throw new OfficeStopped('the bridge to LibreOffice exited');
      }
      const said = JSON.parse(answer.value) as Said;
      if (!said.ok) {
        // whatever went wrong may have left LibreOffice unusable: the next conversion starts a new one
        await this.retire(office);
        if (said.stopped) throw new OfficeStopped(said.error);
        throw new TemplateError(`LibreOffice could not convert the Word template: ${said.error}`);
      }
      return new Uint8Array(fs.readFileSync(output));
    } finally {
      fs.rmSync(input, { force: true });
      fs.rmSync(output, { force: true });
    }
  }

  private start(): Promise<Running> {
    this.running ??= this.launch().catch((err) => {
      this.running = undefined;
      throw err;
    });
    return this.running;
  }

  private async launch(): Promise<Running> {
    const { soffice, python } = requireOffice();
    // loaded here, not at the top: render threads load this module and count nothing
    (await import('../metrics')).rendererStarts.inc({ renderer: 'libreoffice' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-office-'));
    const pipe = `paperlink_${process.pid}_${path.basename(dir).replace(/\W/g, '')}`;
    // in the sandbox (sandbox.ts): LibreOffice sees its own folder and the system's programs, no network
    const inSandbox = sandboxInUse();
    const { command, args } = sandboxed(python, ['-c', BRIDGE, soffice, path.join(dir, 'profile'), pipe], {
      writable: [dir],
      readable: [programFiles(soffice), programFiles(python)],
    });
    const bridge = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    const answers = readline.createInterface({ input: bridge.stdout })[Symbol.asyncIterator]();
    const running: Running = { bridge, answers, dir };
    this.current = running;
    const next = async (): Promise<Said> => {
      const line = await answers.next();
      return line.done ? { error: 'the bridge to LibreOffice exited' } : (JSON.parse(line.value) as Said);
    };
    const started = await next();
    // in the sandbox the pid it says is one of the sandbox's own: the sandbox ends with the bridge instead
    if (!inSandbox) running.office = started.office;
    const ready = started.office ? await next() : started;
    if (!ready.ready) {
      await this.retire(running);
      throw notStarted('LibreOffice', new Error(`LibreOffice at ${soffice} could not be started: ${ready.error}`));
    }
    return running;
  }

  /** Stops LibreOffice (the next conversion starts it again); resolves once its bridge has exited. */
  async close(): Promise<void> {
    if (this.current) await this.retire(this.current);
  }

  /** Stops one LibreOffice; when it is this process's current one, the next conversion starts another. */
  private retire(r: Running): Promise<void> {
    if (this.current === r) {
      this.current = undefined;
      this.running = undefined;
    }
    return stop(r);
  }
}

/** Kills the bridge (or its sandbox) and LibreOffice's group; resolves when the bridge has exited (a kill is not instant). */
function stop(r: Running): Promise<void> {
  const exited =
    r.bridge.exitCode !== null || r.bridge.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => r.bridge.once('exit', () => resolve()));
  // the bridge stops LibreOffice itself when its input ends; killed, it could not
  r.bridge.stdin?.end();
  r.bridge.kill('SIGKILL');
  try {
    if (r.office) process.kill(-r.office, 'SIGKILL');
  } catch {
    // already gone
  }
  fs.rmSync(r.dir, { recursive: true, force: true });
  return exited;
}

export const converter = new Converter();
