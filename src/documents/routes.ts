/** Generated documents: list, get, download the PDF, delete. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ValidationError } from '../errors';
import type { Service } from '../service';
import { PAGE_IMAGE_WIDTH } from '../templates/viewcopy';
import { contentDisposition } from '../http/headers';
import { mayRead } from '../http/scopes';
import { answer, Deleted, described, errors, IdParams, List, PageQuery, pageOf } from '../http/schemas';
import { DocumentSchema, exampleDocument, StorageAppSchema } from './schemas';
import type { StorageApp } from './retention';

/** Under /v1/documents. */
export const documentRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();

    const documentParams = IdParams('document', exampleDocument.id);
    api.get(
      '',
      {
        schema: {
          operationId: 'listDocuments',
          tags: ['Documents'],
          summary: 'List generated documents, newest first',
          querystring: Type.Composite([
            PageQuery,
            Type.Object({
              search: Type.Optional(
                Type.String({
                  maxLength: 200,
                  description: 'Only documents whose name contains this text, ignoring case.',
                }),
              ),
            }),
          ]),
          response: {
            200: described(
              List('Document'),
              {
                object: 'list',
                data: [exampleDocument],
                has_more: false,
                next_cursor: null,
              },
              'A page of documents.',
            ),
            ...errors(401, 422),
          },
        },
      },
      async (req) => service.documents.list(pageOf(req.query), req.query.search || undefined),
    );
    api.get(
      '/:id',
      {
        schema: {
          operationId: 'getDocument',
          tags: ['Documents'],
          summary: 'A generated document',
          params: documentParams,
          response: { 200: answer(DocumentSchema, 'The document record.', exampleDocument), ...errors(401, 404) },
        },
      },
      async (req) => service.documents.get(req.params.id, { links: mayRead(req.apiKey!, 'magic_links') }),
    );
    api.get(
      '/:id/pdf',
      {
        schema: {
          operationId: 'downloadDocument',
          tags: ['Documents'],
          summary: 'The PDF, with its name in Content-Disposition',
          params: documentParams,
          response: {
            200: {
              description: 'The PDF bytes.',
              headers: {
                'Content-Disposition': {
                  type: 'string',
                  examples: [`attachment; filename="Welcome letter.pdf"; filename*=UTF-8''Welcome%20letter.pdf`],
                },
              },
              content: { 'application/pdf': { schema: { type: 'string', contentMediaType: 'application/pdf' } } },
            },
            ...errors(401, 404),
          },
        },
      },
      async (req, reply) => {
        const { document, bytes } = await service.documents.pdf(req.params.id);
        return reply
          .header('Content-Type', 'application/pdf')
          .header('Content-Disposition', contentDisposition(document.name))
          .send(Buffer.from(bytes));
      },
    );
    api.get(
      '/:id/pages/:page',
      {
        schema: {
          operationId: 'documentPageImage',
          tags: ['Documents'],
          summary: `One page as a PNG image, ${PAGE_IMAGE_WIDTH} pixels wide (for a thumbnail, a chat or an e-mail)`,
          params: Type.Object({
            id: documentParams.properties.id,
            page: Type.String({ pattern: '^[1-9][0-9]{0,4}$', description: 'The page, from 1.', examples: ['1'] }),
          }),
          response: {
            200: {
              description: 'The page drawn as a PNG image.',
              content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } } },
            },
            ...errors(401, 404, 422),
          },
        },
      },
      async (req, reply) => {
        if (!/^[1-9]\d{0,4}$/.test(req.params.page))
          throw new ValidationError('The page is a whole number from 1.', [
            { field: 'page', message: 'must be a whole number from 1', code: 'invalid' },
          ]);
        // drawn once on a render thread, under the render budget, then kept; a page past the last is not_found
        const image = await service.documents.pageImage(req.params.id, Number(req.params.page));
        return (
          reply
            .header('Content-Type', 'image/png')
            // a stored document's id (pdf() found it): letters, digits and underscores
            .header('Content-Disposition', `inline; filename="${req.params.id}-page-${req.params.page}.png"`)
            .send(Buffer.from(image))
        );
      },
    );
    api.delete(
      '/:id',
      {
        schema: {
          operationId: 'deleteDocument',
          tags: ['Documents'],
          summary: 'Delete a document and its PDF',
          params: documentParams,
          response: {
            200: described(
              Deleted('document'),
              { id: exampleDocument.id, object: 'document', deleted: true },
              'Deleted.',
            ),
            ...errors(401, 404),
          },
        },
      },
      async (req) => {
        await service.documents.remove(req.params.id);
        return { id: req.params.id, object: 'document' as const, deleted: true as const };
      },
    );
  };

/** The storage settings (GET and PUT /v1/apps/inkit_storage): how long documents are kept by default. */
export const storageAppRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();
    const storageApp = (app: StorageApp) => ({ object: 'app' as const, name: 'inkit_storage' as const, ...app });
    api.get(
      '/v1/apps/inkit_storage',
      {
        schema: {
          operationId: 'getStorageApp',
          tags: ['Documents'],
          summary: 'The storage settings: how long documents are kept by default',
          response: { 200: answer(StorageAppSchema, 'The settings.'), ...errors(401) },
        },
      },
      async () => storageApp(await service.apps.storage.get()),
    );
    api.put(
      '/v1/apps/inkit_storage',
      {
        schema: {
          operationId: 'setUpStorageApp',
          tags: ['Documents'],
          summary: 'Set how long documents are kept when a generate request does not say',
          body: described(StorageAppSchema, { retain_for: { days: 90 } }),
          response: { 200: answer(StorageAppSchema, 'Saved.'), ...errors(400, 401, 409, 415, 422) },
        },
      },
      async (req) => storageApp(await service.apps.storage.put(req.body)),
    );
  };
