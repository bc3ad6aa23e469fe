/** Templates: upload (XML, HTML, Word, fillable PDF, with the files they name), list, get, delete. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ValidationError } from '../errors';
import { isObject } from '../guards';
import type { Service } from '../service';
import { EXAMPLE_IDS } from './store';
import { requireJson } from '../http/errors';
import { acceptMultipart, readMultipart } from '../http/multipart';
import { answer, Deleted, described, DOCX_TYPE, errors, IdParams, List, PageQuery, pageOf } from '../http/schemas';
import { exampleTemplate, TemplateSchema, TemplateUploadBody } from './schemas';

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
      async (req, reply) => {
        const query = req.query;
        let created;
        if (req.isMultipart()) {
          let source: Buffer | undefined;
          const upload = await readMultipart(req);
          const name: string | undefined = upload.fields.name;
          const assets = new Map<string, Uint8Array>();
          for (const file of upload.files) {
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
          created = await service.templates.create({
            source,
            name: name ?? query.name,
            assets: async (p) => assets.get(p),
          });
        } else if (Buffer.isBuffer(req.body)) {
          created = await service.templates.create({ source: new Uint8Array(req.body), name: query.name });
        } else {
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
            throw new ValidationError('name must be text.', [
              { field: 'name', message: 'must be a string', code: 'type' },
            ]);
          // the images and fonts an XML template names, by the path it names them with: { "images/logo.png": "<base64>" }
          const assets = body.assets === undefined ? {} : body.assets;
          if (!isObject(assets) || Object.values(assets).some((v) => typeof v !== 'string')) {
            throw new ValidationError(
              'assets maps each path the template names (e.g. "images/logo.png") to the file as base64.',
              [{ field: 'assets', message: 'must be an object of base64 strings', code: 'type' }],
            );
          }
          const source =
            typeof body.source === 'string'
              ? body.source
              : new Uint8Array(Buffer.from(body.source_base64 as string, 'base64'));
          created = await service.templates.create({
            source,
            name: body.name,
            assets: async (p) =>
              Object.hasOwn(assets, p) ? new Uint8Array(Buffer.from(assets[p] as string, 'base64')) : undefined,
          });
        }
        return reply.status(201).send(created);
      },
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
  };
