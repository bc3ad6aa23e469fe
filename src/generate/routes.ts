/** POST /v1/generate: render a template and deliver it to its destinations. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { renderIdFor, type KeyEntry } from '../idempotency';
import type { Service } from '../service';
import { answer, described, errors, IdempotencyHeader } from '../http/schemas';
import { exampleGenerate, exampleRender, GenerateRequestSchema, RenderSchema } from './schemas';

export const generateRoutes =
  (service: Service): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();

    api.post(
      '',
      {
        schema: {
          operationId: 'generate',
          tags: ['Documents'],
          summary: 'Render a template with merge parameters and store the PDF',
          description:
            'Every variable of the template needs a value (an empty string is a value). Numbers and booleans become text; objects and arrays are refused. Keys the template does not use are listed under `warnings`, and so is text that does not fit its box (`text_overflow`). With an Idempotency-Key, the same key and body return the first answer again for 24 hours.',
          headers: IdempotencyHeader,
          body: described(GenerateRequestSchema, exampleGenerate),
          response: {
            201: answer(
              RenderSchema,
              'Rendered and stored; with magic_link, the link is made and e-mailed.',
              exampleRender,
            ),
            ...errors(400, 401, 409, 413, 415, 422, 500),
          },
        },
      },
      async (req, reply) => {
        const key = req.apiKey!;
        const idem = req.headers['idempotency-key'];
        // with an Idempotency-Key, the key's entry names the render (and so its workflow, its document
        // and its link): however often and however concurrently it is retried within the key's 24
        // hours, each effect happens once
        const work = async (entry?: KeyEntry) => ({
          status: 201,
          body: await service.engine.generate({
            body: req.body,
            caller: { keyId: key.id, name: key.name },
            renderId: idem === undefined || !entry ? undefined : renderIdFor(key.id, idem, entry.since),
          }),
        });
        // a replay answers what the first request was answered, whichever status that was
        const send = (r: { status: number; body: unknown }) => (reply as FastifyReply).status(r.status).send(r.body);
        if (idem === undefined) return send(await work());
        const r = await service.idempotency.run(`${key.id}:POST /v1/generate`, idem, req.body, work);
        if (r.replayed) void reply.header('Idempotent-Replayed', 'true');
        return send(r);
      },
    );
  };
