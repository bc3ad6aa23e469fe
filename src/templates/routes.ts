/** Templates: upload (XML, HTML, Word, fillable PDF, with the files they name), list, get, delete. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ValidationError } from '../errors';
import { isObject } from '../guards';
import type { Service } from '../service';
import { EXAMPLE_IDS, MAX_VERSION, type NewTemplate } from './store';
import { preview } from './preview';
import { GALLERY, GALLERY_FORMATS, galleryList, useGalleryTemplate } from './gallery';
import { requireJson } from '../http/errors';
import { acceptMultipart, readMultipart } from '../http/multipart';
import { answer, Deleted, described, DOCX_TYPE, errors, IdParams, List, PageQuery, pageOf } from '../http/schemas';
import { exampleTemplate, exampleVersion, TemplateSchema, TemplateUploadBody, TemplateVersionSchema } from './schemas';

/** What an upload carries (POST /v1/templates and its versions), in each medium it may come in. */
async function upload(req: FastifyRequest): Promise<NewTemplate> {
  const query = req.query as { name?: string };
  if (req.isMultipart()) {
    let source: Buffer | undefined;
    const form = await readMultipart(req);
    const assets = new Map<string, Uint8Array>();
    for (const file of form.files) {
      if (file.field === 'file' || file.field === 'template') source = file.bytes;
      else {
        // an asset is found by its form field name (e.g. -F "images/logo.png=@logo.png") or its file name
        assets.set(file.field, file.bytes);
        if (file.filename) assets.set(file.filename, file.bytes);
      }
    }
    if (!source)
      throw new ValidationError(
        'Upload the template as the form field "file" (an XML or HTML file, a Word .docx or a fillable PDF); other files are its assets.',
        [{ field: 'file', message: 'is required', code: 'required' }],
      );
    return {
      source,
      name: form.fields.name ?? query.name,
      sample:
        form.fields.sample_values === undefined ? undefined : jsonField(form.fields.sample_values, 'sample_values'),
      assets: async (p) => assets.get(p),
    };
  }
  if (Buffer.isBuffer(req.body)) return { source: new Uint8Array(req.body), name: query.name };
  requireJson(req);
  const body = (req.body ?? {}) as Record<string, unknown>;
  const fields = ['source', 'source_base64'].filter((f) => typeof body[f] === 'string');
  if (fields.length !== 1) {
    throw new ValidationError(
      'Give the template as "source" (XML or HTML text) or "source_base64" (a file: XML, HTML, a Word .docx or a fillable PDF, base64), exactly one.',
      [{ field: 'source', message: 'give exactly one of source or source_base64', code: 'required' }],
    );
  }
  if (body.name !== undefined && typeof body.name !== 'string')
    throw new ValidationError('name must be text.', [{ field: 'name', message: 'must be a string', code: 'type' }]);
  // the images and fonts an XML template names, by the path it names them with: { "images/logo.png": "<base64>" }
  const assets = body.assets === undefined ? {} : body.assets;
  if (!isObject(assets) || Object.values(assets).some((v) => typeof v !== 'string')) {
    throw new ValidationError(
      'assets maps each path the template names (e.g. "images/logo.png") to the file as base64.',
      [{ field: 'assets', message: 'must be an object of base64 strings', code: 'type' }],
    );
  }
  return {
    source:
      typeof body.source === 'string'
        ? body.source
        : new Uint8Array(Buffer.from(body.source_base64 as string, 'base64')),
    name: body.name,
    sample: body.sample_values,
    assets: async (p) =>
      Object.hasOwn(assets, p) ? new Uint8Array(Buffer.from(assets[p] as string, 'base64')) : undefined,
  };
}

/** A form field that holds JSON (a multipart upload's sample_values). */
function jsonField(text: string, field: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ValidationError(`${field} must be JSON: an object of values.`, [
      { field, message: 'must be a JSON object', code: 'type' },
    ]);
  }
}

/** The media type of each format's source file. */
const SOURCE_TYPES = { xml: 'application/xml', html: 'text/html', docx: DOCX_TYPE, pdf: 'application/pdf' } as const;

/** Under /v1/templates. The one API resource that takes multipart (uploads); src/http/multipart.ts says why it is scoped. */
export const templateRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    await acceptMultipart(app, service.config.bodyLimit);
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    api.post(
      '',
      {
        schema: {
          operationId: 'createTemplate',
          tags: ['Templates'],
          summary: 'Store a template: an XML layout, an HTML document with Liquid, a Word document, or a fillable PDF',
          description:
            'Send the XML itself (`Content-Type: application/xml`), the HTML itself (`text/html`; see docs/html-templates.md), a Word document (`' +
            DOCX_TYPE +
            '`; see docs/docx-templates.md), a PDF (`application/pdf`), JSON `{ "name", "source" | "source_base64", "assets" }`, or a multipart form with the template as `file` and the images it names as further files. `?name=` names raw uploads.',
          querystring: Type.Object({
            name: Type.Optional(Type.String({ description: 'Template name for raw uploads (XML, HTML, Word, PDF).' })),
          }),
          body: TemplateUploadBody,
          response: {
            201: answer(TemplateSchema, 'Stored.', exampleTemplate),
            ...errors(400, 401, 413, 415, 422),
          },
        },
      },
      async (req, reply) => reply.status(201).send(await service.templates.create(await upload(req))),
    );
    const templateParams = IdParams('template', EXAMPLE_IDS.letter);
    api.get(
      '',
      {
        schema: {
          operationId: 'listTemplates',
          tags: ['Templates'],
          summary: 'List templates, newest first (by created_at)',
          querystring: PageQuery,
          response: {
            200: described(
              List('Template'),
              {
                object: 'list',
                data: [exampleTemplate],
                has_more: false,
                next_cursor: null,
              },
              'A page of templates.',
            ),
            ...errors(401, 422),
          },
        },
      },
      async (req) => service.templates.list(pageOf(req.query)),
    );
    api.get(
      '/:id',
      {
        schema: {
          operationId: 'getTemplate',
          tags: ['Templates'],
          summary: 'A template and its variables',
          params: templateParams,
          response: { 200: answer(TemplateSchema, 'The template.', exampleTemplate), ...errors(401, 404) },
        },
      },
      async (req) => service.templates.get(req.params.id),
    );
    api.delete(
      '/:id',
      {
        schema: {
          operationId: 'deleteTemplate',
          tags: ['Templates'],
          summary: 'Delete a template (documents made from it stay)',
          params: templateParams,
          response: {
            200: described(
              Deleted('template'),
              { id: EXAMPLE_IDS.letter, object: 'template', deleted: true },
              'Deleted.',
            ),
            ...errors(401, 404),
          },
        },
      },
      async (req) => {
        await service.templates.remove(req.params.id);
        return { id: req.params.id, object: 'template' as const, deleted: true as const };
      },
    );
    await app.register(versionRoutes(service));
    await app.register(previewRoute(service));
    await app.register(galleryRoutes(service));
  };

/** A template's versions, and previews (under /v1/templates, in its multipart scope). */
const versionRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const templateParams = IdParams('template', EXAMPLE_IDS.letter);
    const versionParams = Type.Object({
      id: templateParams.properties.id,
      version: Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'The version, from 1.', examples: ['2'] }),
    });
    api.post(
      '/:id/versions',
      {
        schema: {
          operationId: 'createTemplateVersion',
          tags: ['Templates'],
          summary: 'Save a new version of a template and make it the current one',
          description:
            'Takes what POST /v1/templates takes. The files the new source names and the upload leaves out are taken from the current version; `name` renames the template. Renders that name no `template_version` use the new version from now on; renders that name one, renders already running and postcards already received keep theirs.',
          params: templateParams,
          querystring: Type.Object({
            name: Type.Optional(Type.String({ description: 'Renames the template.' })),
            base_version: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: MAX_VERSION,
                description:
                  'The version this change was made from: if another is current by now, nothing is saved and the answer is `409 version_conflict`.',
              }),
            ),
          }),
          body: TemplateUploadBody,
          response: {
            201: answer(TemplateVersionSchema, 'Saved; it is the current version.', exampleVersion),
            ...errors(400, 401, 404, 409, 413, 415, 422),
          },
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send(await service.templates.addVersion(req.params.id, await upload(req), req.query.base_version)),
    );
    api.get(
      '/:id/versions',
      {
        schema: {
          operationId: 'listTemplateVersions',
          tags: ['Templates'],
          summary: "A template's versions, newest first",
          params: templateParams,
          querystring: PageQuery,
          response: {
            200: described(
              List('TemplateVersion'),
              { object: 'list', data: [exampleVersion], has_more: false, next_cursor: null },
              'A page of versions.',
            ),
            ...errors(401, 404, 422),
          },
        },
      },
      async (req) => service.templates.versions(req.params.id, pageOf(req.query)),
    );
    api.get(
      '/:id/versions/:version',
      {
        schema: {
          operationId: 'getTemplateVersion',
          tags: ['Templates'],
          summary: 'One version of a template',
          params: versionParams,
          response: { 200: answer(TemplateVersionSchema, 'The version.', exampleVersion), ...errors(401, 404) },
        },
      },
      async (req) => {
        const {
          source: _source,
          asset: _asset,
          ...version
        } = await service.templates.version(req.params.id, Number(req.params.version));
        return version;
      },
    );
    api.get(
      '/:id/versions/:version/source',
      {
        schema: {
          operationId: 'getTemplateVersionSource',
          tags: ['Templates'],
          summary: "A version's source file, as it was uploaded (to compare versions, or to edit)",
          params: versionParams,
          response: {
            200: {
              description: 'The XML or HTML text, the Word document or the PDF.',
              content: Object.fromEntries(
                Object.values(SOURCE_TYPES).map((t) => [t, { schema: { type: 'string', contentMediaType: t } }]),
              ),
            },
            ...errors(401, 404),
          },
        },
      },
      async (req, reply) => {
        const v = await service.templates.version(req.params.id, Number(req.params.version));
        return (
          reply
            .header('Content-Type', SOURCE_TYPES[v.format])
            // a file to save, never a page of ours that runs: an HTML template is the customer's code
            .header('Content-Disposition', `attachment; filename="${v.template_id}-v${v.version}.${v.format}"`)
            .header('Content-Security-Policy', 'sandbox')
            .send(Buffer.from(v.source))
        );
      },
    );
    api.post(
      '/:id/versions/:version/make_current',
      {
        schema: {
          operationId: 'makeTemplateVersionCurrent',
          tags: ['Templates'],
          summary: 'Make a version the one renders use when they name none (to go back to an earlier one)',
          params: versionParams,
          response: { 200: answer(TemplateSchema, 'The template, with its new current version.'), ...errors(401, 404) },
        },
      },
      async (req) => service.templates.makeCurrent(req.params.id, Number(req.params.version)),
    );
  };

/** POST /v1/templates/preview: a template rendered to look at, stored nowhere (src/templates/preview.ts). */
const previewRoute =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    api.post(
      '/preview',
      {
        schema: {
          operationId: 'previewTemplate',
          tags: ['Templates'],
          summary: 'Render a template to look at, storing nothing: a saved version, or a source being edited',
          description:
            "Give a `template_id` (its current version, or `template_version`), a `source` (or `source_base64`), or both: a source is rendered with the files of the template named. Variables without a value take the version's `sample_values`, then their default, then show their name as «name». With `page`, that page as a PNG image (`Paperlink-Page-Count` says how many there are); else the PDF. Rendered as generate renders, under the same limits; at most RATE_LIMIT_PREVIEWS a minute per API key.",
          body: Type.Object(
            {
              template_id: Type.Optional(Type.String({ maxLength: 100 })),
              template_version: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_VERSION })),
              source: Type.Optional(Type.String({ description: 'XML or HTML text' })),
              source_base64: Type.Optional(Type.String({ description: 'A Word document or a fillable PDF, base64' })),
              assets: Type.Optional(
                Type.Record(Type.String(), Type.String(), { description: 'Files by path, base64' }),
              ),
              merge_parameters: Type.Optional(
                Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
              ),
              page: Type.Optional(Type.Integer({ minimum: 1, description: 'Answer this page as a PNG image.' })),
            },
            {
              additionalProperties: false,
              examples: [{ template_id: EXAMPLE_IDS.invoice, merge_parameters: { customer_name: 'Acme' }, page: 1 }],
            },
          ),
          response: {
            200: {
              description: 'The PDF, or with `page` the PNG image of that page.',
              content: {
                'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } },
                'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } },
              },
            },
            ...errors(400, 401, 404, 413, 415, 422, 429),
          },
        },
      },
      async (req, reply) => {
        const made = await preview(service.templates, service.renderer, req.body, service.clock.now());
        if (made.pages !== undefined) void reply.header('Paperlink-Page-Count', String(made.pages));
        return reply
          .header('Content-Type', made.type)
          .header('Cache-Control', 'no-store')
          .send(Buffer.from(made.bytes));
      },
    );
  };

/** The starter gallery (src/templates/gallery.ts): what is in it, and a copy of one into the templates. */
const galleryRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const keys = GALLERY.map((e) => e.key);
    const GalleryTemplate = Type.Object({
      object: Type.Literal('gallery_template'),
      key: Type.String({ description: 'Names it in `POST /v1/templates/gallery/{key}/use`.' }),
      name: Type.String(),
      description: Type.String(),
      formats: Type.Array(Type.Union(GALLERY_FORMATS.map((f) => Type.Literal(f)))),
      sample_values: Type.Record(Type.String(), Type.String(), { description: 'What a copy is previewed with.' }),
    });
    api.get(
      '/gallery',
      {
        schema: {
          operationId: 'listGalleryTemplates',
          tags: ['Templates'],
          summary: 'The starter gallery: templates to copy into yours',
          response: {
            200: Type.Object(
              { object: Type.Literal('list'), data: Type.Array(GalleryTemplate) },
              { description: 'Every gallery template, each in XML and HTML.' },
            ),
            ...errors(401),
          },
        },
      },
      () => galleryList(),
    );
    api.post(
      '/gallery/:key/use',
      {
        schema: {
          operationId: 'useGalleryTemplate',
          tags: ['Templates'],
          summary: 'Copy a gallery template into your templates',
          description:
            'A new template (version 1) with the gallery template in the format asked for, its images and fonts, and its sample values. The gallery is not changed.',
          params: Type.Object({ key: Type.String({ maxLength: 100, examples: [keys[0]] }) }),
          body: Type.Object(
            {
              format: Type.Optional(
                Type.Union(
                  GALLERY_FORMATS.map((f) => Type.Literal(f)),
                  { description: 'XML layout (the default) or HTML + Liquid.' },
                ),
              ),
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            },
            { additionalProperties: false, description: '`{}` copies the XML version under its gallery name.' },
          ),
          response: { 201: answer(TemplateSchema, 'Copied.', exampleTemplate), ...errors(400, 401, 404, 422) },
        },
      },
      async (req, reply) =>
        reply
          .status(201)
          .send(await useGalleryTemplate(service.templates, req.params.key, req.body.format ?? 'xml', req.body.name)),
    );
  };
