/**
 * Generated documents: the generate operation (validate, render, deliver to destinations) and the
 * stored document records. A record is written only after its bytes are durable, so a document
 * that can be listed can always be downloaded.
 */
import type { Clock } from '../clock';
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { iso } from '../clock';
import { isUniqueViolation, PURGE_BATCH, type Db } from '../db';
import type { DocumentRow, Schema } from '../db/schema';
import { NotFoundError, ValidationError, type ErrorDetail } from '../errors';
import { newId } from '../ids';
import { toPage, type Page, type PageQuery } from '../pagination';
import { sha256 } from '../secrets';
import type { Storage } from '../storage';
import {
  checkPages,
  isPdf,
  missingVariables,
  type RenderOptions,
  type RenderWarning,
  type TemplateSummary,
} from '../templates';
import type { Renderer } from '../templates/pool';
import type { Stamp } from '../templates/viewcopy';
import { DEFAULT_PAGE_IMAGE_CACHE_MB } from '../config';
import { isVersion, type TemplateStore } from '../templates/store';
import type { Events } from '../events';
import type { LinkInfo, MagicLinks } from '../links';
import { parseLinkSettings, type LinkSettings, type Span } from '../links/policy';
import { deleteAt, KEPT_AFTER_LINKS, requestedRetention, spanBefore, StorageApps } from './retention';
import { PageImages } from './images';
import { Spool, type Spooled } from './spool';
import {
  decodeBase64,
  conformanceOf,
  type PdfStandard,
  attachmentsUnavailable,
  parseAttachments,
  parseMetadata,
  parseStandard,
  unavailableError,
  unavailableReason,
} from '../templates/standards';
import { normalizeValues } from '../templates/values';
import { hasInvisible, isObject } from '../guards';
import { inSpan } from '../tracing';

export interface DocumentInfo {
  id: string;
  object: 'document';
  name: string;
  description: string | null;
  status: 'generated';
  template_id: string;
  /** The template version it was rendered from; null on a document made before versions. */
  template_version: number | null;
  created_at: string;
  created_by: { name: string | null };
  size: number;
  sha256: string;
  /**
   * When it is deleted, with its bytes and links (retain_for, or the storage app's default); null:
   * kept until deleted, or, when it follows its links, while one of them is active.
   */
  expires_at: string | null;
  /** Made only for Magic Links: kept while one is active, deleted KEPT_AFTER_LINKS after the last one ends (expireDue). */
  follows_links: boolean;
  /** The document's Magic Links (only on GET /v1/documents/:id). */
  magic_links?: LinkInfo[];
}

/** Warnings listed one by one in an answer; the rest are counted by code. */
export const MAX_WARNINGS = 20;

export interface Warning {
  code: string;
  field: string;
  message: string;
}

export interface MagicLinkDestination {
  id: string;
  url: string;
  recipient_email: string;
  expires_at: string | null;
  views_left: number | null;
  /** `active` once e-mailed; `send_failed` when the e-mail could not be sent (it is retried). */
  status: LinkInfo['status'];
}

export interface GenerateResult {
  /** The render id. */
  id: string;
  object: 'render';
  document_id: string;
  magic_link_piece_id?: string;
  status: 'completed';
  template_id: string;
  /** The template version rendered: the one the request named, else the current one when it was made. */
  template_version: number | null;
  destinations: {
    inkit_storage?: { document_id: string; name: string; size: number; sha256: string; expires_at: string | null };
    magic_link?: MagicLinkDestination;
  };
  warnings: Warning[];
  created_at: string;
}

/** Who asked, for `created_by`. */
export interface Caller {
  keyId: string | null;
  name: string | null;
}

export const DESTINATIONS = ['inkit_storage', 'magic_link'] as const;
const MAX_NAME = 200;
const MAX_DESCRIPTION = 2000;

function info(row: DocumentRow): DocumentInfo {
  return {
    id: row.id,
    object: 'document',
    name: row.name,
    description: row.description,
    status: 'generated',
    template_id: row.template_id,
    template_version: row.template_version,
    created_at: row.created_at,
    created_by: { name: row.created_by_name },
    size: row.size,
    sha256: row.sha256,
    expires_at: row.expires_at,
    follows_links: row.follows_links === 1,
  };
}

function optionalText(
  body: Record<string, unknown>,
  key: string,
  field: string,
  max: number,
  details: ErrorDetail[],
): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '' || v.length > max) {
    details.push({
      field,
      message: `must be text of 1 to ${max} characters`,
      code: typeof v === 'string' ? 'invalid' : 'type',
    });
    return undefined;
  }
  // a name is shown and downloaded as a file name: no character that hides or reorders others
  if (key !== 'description' && hasInvisible(v)) {
    details.push({
      field,
      message: 'must not hold control or format characters (such as U+202E)',
      code: 'invalid_character',
    });
    return undefined;
  }
  return v.trim();
}

/** Documents whose page count a process keeps (Documents.pageCount). */
const PAGE_COUNTS = 10_000;

/** Most parts one generate request may append to its template. */
export const MAX_APPEND = 20;

/** A part of a merged document: a template with its values, or an uploaded PDF. */
interface AppendPart {
  template?: TemplateSummary;
  values?: Record<string, string>;
  pdf?: Uint8Array;
  /** Its entry in the document's outline. */
  title: string;
  /** Where the request gave it, for errors. */
  field: string;
  /** Where its values are, for errors and warnings about them (`append[0].merge_parameters`). */
  prefix: string;
  /** The keys of its merge_parameters, for unused_parameter warnings. */
  given: string[];
}

/** Why a merged document cannot meet the standard, or undefined. */
function mergeUnavailable(standard: PdfStandard, parts: AppendPart[]): string | undefined {
  if (!parts.length) return undefined;
  if (conformanceOf(standard).ua)
    return "a merged document keeps no tags (its parts' structure trees are not merged), so it cannot meet PDF/UA-1";
  if (parts.some((p) => p.pdf))
    return 'an uploaded PDF is merged as it is, and its fonts and colours are not ours to vouch for';
  for (const p of parts) {
    const reason = unavailableReason(p.template!.kind, standard);
    if (reason) return `${p.field}: ${reason}`;
  }
  return undefined;
}

/** The top-level code says what kind of fix the caller needs; the details say where. */
function failure(details: ErrorDetail[]): ValidationError {
  const codes = new Set(details.map((d) => d.code));
  if (codes.size === 1 && codes.has('required') && details.every((d) => d.field.startsWith('merge_parameters.'))) {
    return new ValidationError(
      `Give a value for every variable of the template; missing: ${details.map((d) => d.field.slice(17)).join(', ')}.`,
      details,
      'missing_variables',
    );
  }
  if (details.length === 1 && details[0].code === 'standard_unavailable') return unavailableError(details[0].message);
  return new ValidationError('The generate request is not valid; see details for each field to fix.', details);
}

export function magicLinkDestination(link: LinkInfo, url: string): MagicLinkDestination {
  return {
    id: link.id,
    url,
    recipient_email: link.recipient_email,
    expires_at: link.expires_at,
    views_left: link.views_left,
    status: link.status,
  };
}

/** How old a note of pending bytes is before housekeeping deletes bytes no record names: far longer than any save. */
export const UNREFERENCED_AFTER_MS = 60 * 60 * 1000;

/**
 * A generate request's `destinations`: whether it is stored (inkit_storage, with its name and
 * settings) and the Magic Link's settings; what is wrong goes into `details`.
 */
function parseDestinations(
  destinations: unknown,
  details: ErrorDetail[],
): {
  stored: boolean;
  storageName?: string;
  storageSettings?: Record<string, unknown>;
  linkSettings?: LinkSettings;
} {
  let storageName: string | undefined;
  let storageSettings: Record<string, unknown> | undefined;
  let stored = false;
  let linkSettings: LinkSettings | undefined;
  if (!isObject(destinations) || Object.keys(destinations).length === 0) {
    details.push({
      field: 'destinations',
      message: `is required: an object naming at least one of ${DESTINATIONS.join(', ')}`,
      code: 'required',
    });
  } else {
    for (const [key, settings] of Object.entries(destinations)) {
      const field = `destinations.${key}`;
      if (!(DESTINATIONS as readonly string[]).includes(key)) {
        details.push({
          field,
          message: `is not a destination; use ${DESTINATIONS.join(' or ')}`,
          code: 'unknown_destination',
        });
      } else if (!isObject(settings)) {
        details.push({ field, message: 'must be an object of settings ({} for the defaults)', code: 'type' });
      } else if (key === 'magic_link') {
        try {
          linkSettings = parseLinkSettings(settings, field);
        } catch (err) {
          if (!(err instanceof ValidationError)) throw err;
          details.push(...err.details);
        }
      } else {
        stored = true;
        storageSettings = settings;
        storageName = optionalText(settings, 'name', `${field}.name`, MAX_NAME, details);
        for (const k of Object.keys(settings))
          if (k !== 'name' && k !== 'retain_for')
            details.push({ field: `${field}.${k}`, message: 'is not a storage setting', code: 'unknown_field' });
      }
    }
  }
  return { stored, storageName, storageSettings, linkSettings };
}

export class Documents {
  constructor(
    private readonly db: Db,
    private readonly storage: Storage,
    private readonly templates: TemplateStore,
    private readonly clock: Clock,
    private readonly links: MagicLinks,
    private readonly events: Events,
    private readonly renderer: Renderer,
    /** Runs a small write (SQLite: committed with the others of the same moment, see Database). */
    private readonly inTransaction: <T>(work: (trx: Db) => Promise<T>) => Promise<T> = (work) =>
      db.transaction().execute(work),
    /** Bytes of page images kept drawn (PAGE_IMAGE_CACHE_MB). */
    pageImageBytes = DEFAULT_PAGE_IMAGE_CACHE_MB * 1024 * 1024,
  ) {
    this.apps = new StorageApps(db, clock);
    this.spool = new Spool(db, clock);
    this.pageImages = new PageImages(renderer, async (id) => (await this.pdf(id)).bytes, pageImageBytes);
  }

  /** Page images, each page drawn once (./images.ts). */
  readonly pageImages: PageImages;

  /** Bytes of renders whose storing failed, waiting for their retry (./spool.ts). */
  readonly spool: Spool;

  /**
   * The bytes a render of this id left waiting for its retry (its storing failed), if any: the
   * retry stores them instead of rendering again. Never with STORAGE=database (nothing to wait for).
   */
  spooled<M>(renderId: string | undefined): Promise<Spooled<M> | undefined> {
    if (!renderId || this.storage.kind === 'database') return Promise.resolve(undefined);
    return this.spool.get<M>(renderId);
  }

  /** The storage app: how long documents are kept when their request does not say (retention.ts). */
  readonly apps: StorageApps;

  /** When a document made now is deleted: as asked, else the storage app's default; null: kept. */
  private async expiresAt(asked: Span | undefined, now: Date): Promise<string | null> {
    const span = asked ?? (await this.apps.defaultRetention());
    return span ? deleteAt(span, now) : null;
  }

  /**
   * A template and its values as a request gives them (`template_id`, `merge_parameters`), the
   * request's own (`at` empty) or a part's (`append[0].`): each broken field is a detail.
   */
  private async templateAndValues(source: Record<string, unknown>, at: string, details: ErrorDetail[]) {
    let template: TemplateSummary | undefined;
    let version: number | undefined;
    const templateId = source.template_id;
    const asked = source.template_version;
    const askedOk = asked === undefined || isVersion(asked);
    if (!askedOk)
      details.push({
        field: `${at}template_version`,
        message: 'must be a version number of the template (1, 2, …); leave it out for the current one',
        code: 'type',
      });
    if (typeof templateId !== 'string' || templateId === '') {
      details.push({
        field: `${at}template_id`,
        message: 'is required: the id of a template, e.g. tmpl_example_letter',
        code: 'required',
      });
    } else {
      try {
        ({ template, version } = await this.templates.resolve(templateId, askedOk ? asked : undefined));
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        details.push(
          err.resource === 'template version'
            ? {
                field: `${at}template_version`,
                message: `the template has no version ${asked as number}; GET /v1/templates/${templateId}/versions lists them`,
                code: 'not_found',
              }
            : {
                field: `${at}template_id`,
                message: `no template has the id ${JSON.stringify(templateId)}; GET /v1/templates lists them`,
                code: 'not_found',
              },
        );
      }
    }
    const field = `${at}merge_parameters`;
    let values: Record<string, string> = {};
    if (source.merge_parameters === undefined) {
      details.push({
        field,
        message: 'is required: an object with a value for each variable of the template',
        code: 'required',
      });
    } else {
      try {
        values = normalizeValues(source.merge_parameters, field);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        details.push(...err.details);
      }
    }
    const given = isObject(source.merge_parameters) ? source.merge_parameters : {};
    // an optional variable (one with a default) may be left out: it takes its default
    if (template && isObject(source.merge_parameters))
      for (const v of missingVariables(template, given))
        details.push({ field: `${field}.${v}`, message: 'is required by the template', code: 'required' });
    return { template, version, values, given };
  }

  /**
   * `append`: the templates (each with its merge parameters) and uploaded PDFs merged after the
   * request's template, in order; each broken one reported under its place (`append[1].template_id`).
   */
  private async parseAppend(value: unknown, details: ErrorDetail[]): Promise<AppendPart[]> {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_APPEND) {
      details.push({
        field: 'append',
        message: `must be a list of 1 to ${MAX_APPEND} parts, each {template_id, merge_parameters} or {pdf}`,
        code: 'type',
      });
      return [];
    }
    const parts: AppendPart[] = [];
    for (const [i, item] of value.entries()) {
      const at = `append[${i}]`;
      if (!isObject(item)) {
        details.push({
          field: at,
          message: 'must be an object: {template_id, merge_parameters} or {pdf}',
          code: 'type',
        });
        continue;
      }
      const before = details.length;
      for (const k of Object.keys(item))
        if (!['template_id', 'template_version', 'merge_parameters', 'pdf', 'title'].includes(k))
          details.push({ field: `${at}.${k}`, message: 'is not a field of a part', code: 'unknown_field' });
      const title = optionalText(item, 'title', `${at}.title`, MAX_NAME, details);
      if ((item.template_id === undefined) === (item.pdf === undefined)) {
        details.push({
          field: at,
          message: 'needs either template_id (with merge_parameters) or pdf',
          code: 'required',
        });
        continue;
      }
      if (item.pdf !== undefined) {
        const pdf = decodeBase64(item.pdf);
        if (!pdf || !isPdf(pdf))
          details.push({ field: `${at}.pdf`, message: 'must be a PDF file in base64', code: 'invalid' });
        else if (details.length === before)
          parts.push({
            pdf,
            title: title ?? `Part ${i + 2}`,
            field: `${at}.pdf`,
            prefix: at,
            given: [],
          });
        continue;
      }
      // a part's merge_parameters may be left out (a template without variables needs none)
      const { template, values, given } = await this.templateAndValues(
        { ...item, merge_parameters: item.merge_parameters ?? {} },
        `${at}.`,
        details,
      );
      if (template && details.length === before)
        parts.push({
          template,
          values,
          title: title ?? template.name,
          field: `${at}.template_id`,
          prefix: `${at}.merge_parameters`,
          given: Object.keys(given),
        });
    }
    return parts;
  }

  /**
   * Renders one template. Errors and warnings about a value name it where the request gave it
   * (`merge_parameters.name`, `append[0].merge_parameters.name`).
   */
  private async renderOne(
    template: TemplateSummary,
    values: Record<string, string>,
    prefix: string,
    options: RenderOptions,
    warnings: Warning[],
  ): Promise<Uint8Array> {
    const drawn: RenderWarning[] = [];
    try {
      return await this.renderer.render(template, values, { ...options, warnings: drawn });
    } catch (err) {
      if (err instanceof ValidationError) {
        const fixed = err.details.map((d) =>
          template.variables.includes(d.field) ? { ...d, field: `${prefix}.${d.field}` } : d,
        );
        throw new ValidationError(err.message, fixed, err.code);
      }
      throw err;
    } finally {
      const where = prefix === 'merge_parameters' ? 'template' : prefix.replace(/\.merge_parameters$/, '');
      for (const w of drawn)
        warnings.push({ code: w.code, field: w.variable ? `${prefix}.${w.variable}` : where, message: w.message });
    }
  }

  /**
   * Renders every part and merges them into one document (merge.ts): the XML templates a second
   * time with their place in the whole, so their page numbers run across it.
   */
  private async renderMerged(
    parts: AppendPart[],
    whole: Pick<RenderOptions, 'standard' | 'metadata' | 'attachments'> & { now: Date },
    warnings: Warning[],
  ): Promise<Uint8Array> {
    const pdfs: Uint8Array[] = [];
    for (const p of parts)
      pdfs.push(
        p.template ? await this.renderOne(p.template, p.values!, p.prefix, { now: whole.now }, warnings) : p.pdf!,
      );
    const counts = await Promise.all(
      parts.map((p, i) => this.renderer.pages(pdfs[i], p.template ? undefined : p.field)),
    );
    const total = counts.reduce((a, b) => a + b, 0);
    // parts that add up to more pages than one document may have are refused before any is copied
    checkPages(total);
    let first = 1;
    for (const [i, p] of parts.entries()) {
      if (p.template?.kind === 'xml')
        pdfs[i] = await this.renderer.render(p.template, p.values!, { now: whole.now, numbering: { first, total } });
      first += counts[i];
    }
    return this.renderer.merge(
      parts.map((p, i) => ({ pdf: pdfs[i], title: p.title, field: p.template ? undefined : p.field })),
      whole,
    );
  }

  /**
   * `POST /v1/generate`: checks the whole request and reports every broken field at once, renders
   * the template, writes the bytes durably, then commits the record.
   */
  /** POST /v1/generate's work, run by the generate flow's activity: a span of the request's trace (src/tracing.ts). */
  generate(body: unknown, caller: Caller, renderId?: string): Promise<GenerateResult> {
    return inSpan('paperlink.generate', renderId ? { 'paperlink.render_id': renderId } : {}, async (span) => {
      const result = await this.generateNow(body, caller, renderId);
      span.setAttributes({
        'paperlink.render_id': result.id,
        'paperlink.document_id': result.document_id,
        ...(result.magic_link_piece_id ? { 'paperlink.link_id': result.magic_link_piece_id } : {}),
      });
      return result;
    });
  }

  private async generateNow(body: unknown, caller: Caller, renderId?: string): Promise<GenerateResult> {
    if (!isObject(body))
      throw new ValidationError('The body must be a JSON object with template_id, merge_parameters and destinations.', [
        { field: 'body', message: 'must be an object', code: 'type' },
      ]);
    const details: ErrorDetail[] = [];

    const templateId = body.template_id;
    const { template, version, values, given } = await this.templateAndValues(body, '', details);

    const { stored, storageName, storageSettings, linkSettings } = parseDestinations(body.destinations, details);
    const standard = parseStandard(body.pdf_standard, 'pdf_standard', details);
    const metadata = parseMetadata(body.pdf_metadata, 'pdf_metadata', details);
    const attachments = parseAttachments(body.attachments, 'attachments', details);
    const cannotAttach = attachmentsUnavailable(standard, attachments ?? []);
    if (cannotAttach) details.push({ field: 'attachments', message: cannotAttach, code: 'not_allowed' });
    const parts = await this.parseAppend(body.append, details);
    const unavailable =
      template && standard && (unavailableReason(template.kind, standard) ?? mergeUnavailable(standard, parts));
    if (unavailable) details.push({ field: 'pdf_standard', message: unavailable, code: 'standard_unavailable' });
    const name = optionalText(body, 'name', 'name', MAX_NAME, details);
    const description = optionalText(body, 'description', 'description', MAX_DESCRIPTION, details) ?? null;
    const retainFor = requestedRetention(body, storageSettings, details);
    if (details.length || !template) throw failure(details);
    // made only for a link, with no time asked nor set as the storage app's default: it follows its links
    const follows =
      !stored && linkSettings !== undefined && retainFor === undefined && !(await this.apps.defaultRetention());
    // before rendering: a link needs the Magic Link app set up (409) and an allowed auth type
    if (linkSettings) await this.links.prepare(linkSettings, 'destinations.magic_link');

    // a render id given by the engine (a retried Temporal activity) finds the document made before
    let row = renderId
      ? await this.db.selectFrom('documents').selectAll().where('render_id', '=', renderId).executeTakeFirst()
      : undefined;
    const drawn: Warning[] = [];
    if (!row) {
      const now = this.clock.now();
      const whole = { now, standard, metadata, attachments };
      // a retry of a render whose storing failed stores the bytes it made, with what it said
      const spooled = await this.spooled<Warning[]>(renderId);
      if (spooled) drawn.push(...spooled.meta);
      const pdf = spooled
        ? spooled.pdf
        : parts.length
          ? await this.renderMerged(
              [
                { template, values, prefix: 'merge_parameters', title: template.name, field: 'template_id', given: [] },
                ...parts,
              ],
              whole,
              drawn,
            )
          : await this.renderOne(template, values, 'merge_parameters', whole, drawn);
      row = {
        id: newId('doc', now),
        render_id: renderId ?? newId('rnd', now),
        // no name given: the template's (its date is created_at); recipients see it as the title
        name: storageName ?? name ?? template.name,
        description,
        status: 'generated',
        template_id: templateId as string,
        template_version: version ?? null,
        created_by_key_id: caller.keyId,
        created_by_name: caller.name,
        size: pdf.length,
        sha256: sha256(pdf),
        storage: this.storage.kind,
        created_at: iso(now),
        expires_at: follows ? null : await this.expiresAt(retainFor, now),
        follows_links: follows ? 1 : 0,
      };
      try {
        await this.save(row, pdf, renderId ? { renderId, meta: drawn, spooled: spooled !== undefined } : undefined);
      } catch (err) {
        // another run of the same render stored it first: that document is this render's (what this
        // run spooled, if anything, goes with housekeeping: Spool.purge)
        if (!(renderId && isUniqueViolation(err))) throw err;
        row = await this.db
          .selectFrom('documents')
          .selectAll()
          .where('render_id', '=', renderId)
          .executeTakeFirstOrThrow();
      }
    }

    const unused = [
      { prefix: 'merge_parameters', template, given: Object.keys(given) },
      ...parts.flatMap((p) => (p.template ? [{ prefix: p.prefix, template: p.template, given: p.given }] : [])),
    ].flatMap((p) =>
      p.given
        .filter((k) => !p.template.variables.includes(k))
        .map((k) => ({
          code: 'unused_parameter',
          field: `${p.prefix}.${k}`,
          message: `the template has no variable ${JSON.stringify(k)}; the value was not used`,
        })),
    );
    const warnings: Warning[] = [...unused, ...drawn];
    // an answer stays small whatever was sent: the first warnings, then how many more of each code
    if (warnings.length > MAX_WARNINGS) {
      const rest = warnings.splice(MAX_WARNINGS);
      const counts = new Map<string, number>();
      for (const w of rest) counts.set(w.code, (counts.get(w.code) ?? 0) + 1);
      for (const [code, n] of counts)
        warnings.push({
          code,
          field: code === 'unused_parameter' ? 'merge_parameters' : 'template',
          message: `and ${n} more like this, not listed`,
        });
    }
    const result: GenerateResult = {
      id: row.render_id,
      object: 'render',
      document_id: row.id,
      status: 'completed',
      template_id: row.template_id,
      template_version: row.template_version,
      destinations: {},
      warnings,
      created_at: row.created_at,
    };
    // the document is stored either way: a Magic Link shows the stored document
    if (stored)
      result.destinations.inkit_storage = {
        document_id: row.id,
        name: row.name,
        size: row.size,
        sha256: row.sha256,
        expires_at: row.expires_at,
      };
    if (linkSettings) {
      // one link per render: a retried render finds it, and an e-mailed link is not e-mailed again
      const { link, url } = await this.links.create(row.id, linkSettings, caller.keyId, row.render_id);
      result.magic_link_piece_id = link.id;
      result.destinations.magic_link = magicLinkDestination(link, url);
      if (link.status === 'send_failed') {
        result.warnings.push({
          code: 'magic_link_send_failed',
          field: 'destinations.magic_link.recipient_email',
          message: `the e-mail could not be sent (${link.send_error}); it is retried, or POST /v1/magic_links/${link.id}/resend`,
        });
      }
    }
    return result;
  }

  /**
   * Stores an already rendered PDF as a document (postcards); returns its id. Idempotent by
   * `renderId`: when a document of that render exists already (a retried render), nothing is
   * written and its id is returned; the first render's bytes and record stay as they were.
   */
  async store(d: {
    renderId: string;
    templateId: string;
    templateVersion: number | null;
    name: string;
    description: string | null;
    pdf: Uint8Array;
    caller: Caller;
    /** What the render said beside its bytes: kept with them when they cannot be stored, for the retry (spooled()). */
    meta?: unknown;
    /** Whether the bytes came from the spool (they wait there no more once stored). */
    spooled?: boolean;
  }): Promise<string> {
    const stored = () =>
      this.db.selectFrom('documents').select('id').where('render_id', '=', d.renderId).executeTakeFirst();
    const before = await stored();
    if (before) return before.id;
    const now = this.clock.now();
    const row: DocumentRow = {
      id: newId('doc', now),
      render_id: d.renderId,
      name: d.name.slice(0, MAX_NAME),
      description: d.description,
      status: 'generated',
      template_id: d.templateId,
      template_version: d.templateVersion,
      created_by_key_id: d.caller.keyId,
      created_by_name: d.caller.name,
      size: d.pdf.length,
      sha256: sha256(d.pdf),
      storage: this.storage.kind,
      created_at: iso(now),
      expires_at: await this.expiresAt(undefined, now),
      follows_links: 0,
    };
    try {
      await this.save(row, d.pdf, { renderId: d.renderId, meta: d.meta ?? null, spooled: d.spooled === true });
    } catch (err) {
      // the same render stored it meanwhile (the same work done twice at once)
      if (!isUniqueViolation(err)) throw err;
      return (await stored())!.id;
    }
    return row.id;
  }

  private async exists(id: string): Promise<boolean> {
    return (await this.db.selectFrom('documents').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  /**
   * Bytes first, durably; then the record. Every save writes a key of its own (a new document id),
   * so no two saves ever write the same bytes' key. Outside the database the key is noted as
   * pending first and the note goes in the record's transaction: a crash on the way leaves a note,
   * and housekeeping deletes the bytes no record names (`purgeUnreferenced`).
   */
  private save(
    row: DocumentRow,
    pdf: Uint8Array,
    spool?: { renderId: string; meta: unknown; spooled: boolean },
  ): Promise<void> {
    const attributes = {
      'paperlink.document_id': row.id,
      'paperlink.storage': this.storage.kind,
      'paperlink.bytes': pdf.byteLength,
    };
    return inSpan('paperlink.store', attributes, () => this.saveNow(row, pdf, spool));
  }

  private async saveNow(
    row: DocumentRow,
    pdf: Uint8Array,
    spool?: { renderId: string; meta: unknown; spooled: boolean },
  ): Promise<void> {
    if (this.storage.kind === 'database') {
      await this.inTransaction(async (trx) => {
        await this.storage.put(row.id, pdf, trx);
        await this.commit(trx, row);
      });
      return;
    }
    try {
      await this.inTransaction((trx) =>
        trx.insertInto('storage_pending').values({ key: row.id, since: row.created_at }).execute(),
      );
      await this.storage.put(row.id, pdf);
    } catch (err) {
      // the storage (or the database) is away: the bytes wait for the retry, which stores them
      // instead of rendering again (./spool.ts)
      if (spool && !spool.spooled) await this.spool.keep(spool.renderId, pdf, spool.meta);
      throw err;
    }
    try {
      await this.inTransaction(async (trx) => {
        const noted = await trx.deleteFrom('storage_pending').where('key', '=', row.id).executeTakeFirst();
        // housekeeping took the note: this save took longer than UNREFERENCED_AFTER_MS, its bytes may be gone
        if (noted.numDeletedRows !== 1n) throw new Error(`the save of document ${row.id} outlived its pending note`);
        await this.commit(trx, row);
        // stored: the bytes wait no more
        if (spool?.spooled) await trx.deleteFrom('render_spool').where('render_id', '=', spool.renderId).execute();
      });
    } catch (err) {
      // tidy now what housekeeping would later, unless the commit went through after all
      if (!(await this.exists(row.id).catch(() => true)))
        await this.storage
          .delete(row.id)
          .then(() => this.db.deleteFrom('storage_pending').where('key', '=', row.id).execute())
          .catch(() => undefined);
      throw err;
    }
  }

  private async commit(trx: Db, row: DocumentRow): Promise<void> {
    await trx.insertInto('documents').values(row).execute();
    await this.events.emit(trx, 'document.generated', row.id, () => ({ object: info(row) }));
  }

  /**
   * Deletes the bytes of saves that never committed (a crash between the bytes and the record) and
   * of deletes that never finished, once their note is UNREFERENCED_AFTER_MS old: a batch at a time,
   * through the notes' index, whatever the storage holds. How many notes it settled.
   */
  async purgeUnreferenced(): Promise<number> {
    if (this.storage.kind === 'database') return 0;
    const before = iso(new Date(this.clock.now().getTime() - UNREFERENCED_AFTER_MS));
    let settled = 0;
    for (;;) {
      const notes = await this.db
        .selectFrom('storage_pending')
        .select('key')
        .where('since', '<', before)
        .orderBy('since')
        .limit(PURGE_BATCH)
        .execute();
      if (notes.length === 0) return settled;
      const keys = notes.map((n) => n.key);
      const named = new Set(
        (await this.db.selectFrom('documents').select('id').where('id', 'in', keys).execute()).map((d) => d.id),
      );
      for (const key of keys) if (!named.has(key)) await this.storage.delete(key);
      await this.db.deleteFrom('storage_pending').where('key', 'in', keys).execute();
      settled += notes.length;
      if (notes.length < PURGE_BATCH) return settled;
    }
  }

  private async row(id: string): Promise<DocumentRow> {
    const row = await this.db.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new NotFoundError('document', id);
    return row;
  }

  /** The record; with its Magic Links unless `links` is false (a key without links:read). */
  async get(id: string, { links = true }: { links?: boolean } = {}): Promise<DocumentInfo> {
    const document = info(await this.row(id));
    if (!links) return document;
    const magicLinks = await this.links.forDocument(id);
    // a document that follows its links, all of them ended: the sweep's date for it
    const ends = magicLinks.map((l) => l.ended_at);
    if (document.follows_links && ends.length && ends.every((e) => e !== null))
      document.expires_at = deleteAt(KEPT_AFTER_LINKS, new Date(ends.sort().at(-1)!));
    return { ...document, magic_links: magicLinks };
  }

  /** The record (without its links: downloads and Magic Link views need only the name) and the bytes. */
  async pdf(id: string): Promise<{ document: DocumentInfo; bytes: Uint8Array }> {
    const document = info(await this.row(id));
    const bytes = await this.storage.get(id);
    if (!bytes) throw new Error(`the bytes of document ${id} are missing from ${this.storage.kind} storage`);
    return { document, bytes };
  }

  /**
   * How many pages a stored document has (its bytes never change): counted on a render thread the
   * first time, then kept in this process (PAGE_COUNTS documents at most). What the recipient's
   * viewer shows without downloads, and the pages its reports may name.
   */
  async pageCount(id: string): Promise<number> {
    const known = this.pageCounts.get(id);
    if (known !== undefined) return known;
    const pages = await this.renderer.pages((await this.pdf(id)).bytes);
    if (this.pageCounts.size >= PAGE_COUNTS) this.pageCounts.delete(this.pageCounts.keys().next().value!);
    this.pageCounts.set(id, pages);
    return pages;
  }

  private readonly pageCounts = new Map<string, number>();

  /**
   * One page (from 1) of a stored document as a PNG, with a viewer's stamp laid over it when given:
   * drawn once, then kept (./images.ts). A page past the last is not_found.
   */
  async pageImage(id: string, page: number, stamp?: Stamp): Promise<Uint8Array> {
    // the document is there (it may have been deleted since its pages were drawn), and has the page:
    // its count is kept, so a page past the last costs no draw
    await this.row(id);
    if (page > (await this.pageCount(id))) throw new NotFoundError('page', String(page));
    return this.pageImages.image(id, page, stamp);
  }

  /** `POST /v1/documents/:id/magic_links`: a new Magic Link for a stored document, with the settings of the generate destination. */
  /**
   * Shares a stored document with a new Magic Link. `shareKey` names the share of this document (an
   * activity's retry finds the link it made instead of making a second): the link's `render_id` is
   * made from the document's id and the key.
   */
  async share(
    id: string,
    settings: unknown,
    createdByKeyId: string | null,
    shareKey?: string,
  ): Promise<{ link: LinkInfo; url: string }> {
    await this.row(id);
    // the name is the document's and the key's: the same key on another document is another share
    const name = shareKey === undefined ? undefined : `shr_${sha256(`share\n${id}\n${shareKey}`).slice(0, 26)}`;
    return this.links.create(id, parseLinkSettings(settings, ''), createdByKeyId, name, true);
  }

  /** Newest first; `search` keeps the documents whose name contains it, ignoring case. */
  async list(page: PageQuery, search?: string): Promise<Page<DocumentInfo>> {
    let q = this.db
      .selectFrom('documents')
      .selectAll()
      .orderBy('id', 'desc')
      .limit(page.limit + 1);
    if (page.startingAfter) q = q.where('id', '<', page.startingAfter);
    if (search) {
      const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      q = q.where(sql<boolean>`lower(name) like ${pattern} escape '\\'`);
    }
    return toPage(await q.execute(), page.limit, info);
  }

  /**
   * Deletes a document: its record, its links (each ends, reason `document_deleted`) and the
   * events `document.deleted` and `magic_link.expired` commit together, with a note that its bytes
   * are to go; then they go. A crash between the two leaves bytes no record names (never a record
   * without its bytes), and the note, by which housekeeping deletes them.
   */
  async remove(id: string, reason: 'deleted' | 'expired' = 'deleted', due?: Due): Promise<void> {
    const ended = await this.db.transaction().execute(async (trx) => {
      // the sweep deletes it only if it is still due (a link made for it meanwhile keeps it)
      const row = await trx
        .deleteFrom('documents')
        .where('id', '=', id)
        .$if(due !== undefined, (q) => q.where(due!))
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new NotFoundError('document', id);
      const links = await this.links.endForDocument(
        trx,
        id,
        reason === 'expired' ? 'document_expired' : 'document_deleted',
      );
      await this.events.emit(trx, 'document.deleted', id, () => ({ object: info(row), reason }));
      if (this.storage.kind !== 'database')
        await trx
          .insertInto('storage_pending')
          .values({ key: id, since: iso(this.clock.now()) })
          .execute();
      return links;
    });
    this.links.ended(ended);
    this.pageImages.forget(id);
    await this.storage.delete(id);
    await this.db.deleteFrom('storage_pending').where('key', '=', id).execute();
  }

  /**
   * The retention sweep: deletes the documents whose time has come (`expires_at`), oldest first,
   * each as `DELETE /v1/documents/:id` does (its bytes, its links ending with reason
   * `document_expired`, the events), with `reason: expired` on `document.deleted`. Several
   * processes may sweep at once: a document another one deleted first is skipped. Returns how many
   * this call deleted.
   */
  async expireDue(batch = 100): Promise<number> {
    let deleted = 0;
    const now = this.clock.now();
    // two queries, each on its own index: by time, and documents that follow their links
    for (const due of [byTime(iso(now)), afterLinks(spanBefore(KEPT_AFTER_LINKS, now))]) {
      for (;;) {
        const found = await this.db
          .selectFrom('documents')
          .select('id')
          .where(due)
          .orderBy('id')
          .limit(batch)
          .execute();
        for (const { id } of found) {
          try {
            await this.remove(id, 'expired', due);
            deleted++;
          } catch (err) {
            if (!(err instanceof NotFoundError)) throw err;
          }
        }
        if (found.length < batch) break;
      }
    }
    return deleted;
  }
}

/** A condition on a document row: whether the retention sweep deletes it. */
type Due = (eb: ExpressionBuilder<Schema, 'documents'>) => Expression<SqlBool>;

/** Its time (retain_for, or the storage app's default) has come. */
const byTime =
  (now: string): Due =>
  (eb) =>
    eb('documents.expires_at', '<=', now);

/**
 * It follows its links, none of them is active or ended after `before`, and one was made (or it
 * was made before `before`: a document whose link was never made goes too).
 */
const afterLinks =
  (before: string): Due =>
  (eb) => {
    const links = () =>
      eb.selectFrom('magic_links').select('magic_links.id').whereRef('magic_links.document_id', '=', 'documents.id');
    return eb.and([
      eb('documents.follows_links', '=', 1),
      eb.not(
        eb.exists(
          links().where((l) => l.or([l('magic_links.ended_at', 'is', null), l('magic_links.ended_at', '>', before)])),
        ),
      ),
      eb.or([eb('documents.created_at', '<=', before), eb.exists(links())]),
    ]);
  };
