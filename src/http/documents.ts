/** Generated documents: list, get, download the PDF, delete. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Service } from '../service';
import { contentDisposition } from './headers';
import { mayRead } from './scopes';
import {
  answer,
  Deleted,
  described,
  DocumentSchema,
  errors,
  exampleDocument,
  IdParams,
  List,
  PageQuery,
  pageOf,
} from './schemas';

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
