import {
  NodeApiError,
  NodeConnectionTypes,
  NodeOperationError,
  type IBinaryData,
  type IDataObject,
  type IHookFunctions,
  type INodeType,
  type INodeTypeDescription,
  type IWebhookFunctions,
  type IWebhookResponseData,
  type JsonObject,
} from 'n8n-workflow';
import { errorBody } from '../../src/errors';
import { EVENT_TYPES } from '../../src/events/types';
import { SIGNATURE_HEADER, verify } from '../../src/webhooks/signature';
import { apiRequest, describeServiceError, downloadPdf, serviceErrorOf } from '../Paperlink/transport';

const label = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => (w === 'magic' ? 'Magic' : w === 'link' ? 'Link' : w[0].toUpperCase() + w.slice(1)))
    .join(' ');

/** The events to subscribe to: "*" alone, or a list of event types. */
function eventsOf(ctx: IHookFunctions): '*' | string[] {
  const events = ctx.getNodeParameter('events') as string[];
  if (events.includes('*') && events.length > 1) {
    throw new NodeOperationError(ctx.getNode(), 'Choose "Any Event" alone, or only the events you want', {
      description: 'Any Event already includes every other event.',
    });
  }
  return events.includes('*') ? '*' : events;
}

interface Subscription {
  webhookId?: string;
  webhookSecret?: string;
}

/** Starts a workflow on Paperlink's events: subscribes on activation, checks every delivery's signature. */
export class PaperlinkTrigger implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Paperlink Trigger',
    name: 'paperlinkTrigger',
    icon: { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' },
    group: ['trigger'],
    version: 1,
    subtitle:
      '={{ $parameter["events"].includes("*") ? "On any event" : "On " + $parameter["events"].map(e => e.replace(/[._]/g, " ")).join(", ") }}',
    description: 'Starts the workflow when a Paperlink document, Magic Link or postcard changes',
    defaults: { name: 'Paperlink Trigger' },
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: 'paperlinkApi', required: true }],
    webhooks: [{ name: 'default', httpMethod: 'POST', responseMode: 'onReceived', path: 'webhook' }],
    properties: [
      {
        displayName: 'Events',
        name: 'events',
        type: 'multiOptions',
        required: true,
        default: ['*'],
        description: 'The events that start the workflow: Any Event alone, or the events you choose',
        options: [{ name: 'Any Event', value: '*' }, ...EVENT_TYPES.map((t) => ({ name: label(t), value: t }))],
      },
      {
        displayName: 'Options',
        name: 'options',
        type: 'collection',
        placeholder: 'Add Option',
        default: {},
        options: [
          {
            displayName: 'Attach PDF',
            name: 'attachPdf',
            type: 'boolean',
            default: false,
            description:
              'Whether to download the PDF into the item as binary data on Document Generated and Postcard Rendered events',
          },
          {
            displayName: 'Put Output File in Field',
            name: 'binaryPropertyName',
            type: 'string',
            default: 'data',
            hint: 'The name of the output binary field to put the PDF in',
          },
        ],
      },
    ],
  };

  webhookMethods = {
    default: {
      /** Whether the subscription kept in the node's static data still exists for this URL and these events. */
      async checkExists(this: IHookFunctions): Promise<boolean> {
        const data = this.getWorkflowStaticData('node') as Subscription;
        if (!data.webhookId) return false;
        let hook: IDataObject;
        try {
          hook = (await apiRequest.call(
            this,
            'GET',
            `/v1/webhooks/${encodeURIComponent(data.webhookId)}`,
          )) as IDataObject;
        } catch (err) {
          if ((err as { httpCode?: string }).httpCode === '404') {
            delete data.webhookId;
            delete data.webhookSecret;
            return false;
          }
          throw new NodeApiError(this.getNode(), err as JsonObject);
        }
        const events = eventsOf(this);
        const same =
          hook.url === this.getNodeWebhookUrl('default') &&
          JSON.stringify([...(hook.events as string[])].sort()) ===
            JSON.stringify(events === '*' ? ['*'] : [...events].sort());
        if (same) return true;
        // changed in the editor: replace it
        await apiRequest.call(this, 'DELETE', `/v1/webhooks/${encodeURIComponent(data.webhookId)}`);
        delete data.webhookId;
        delete data.webhookSecret;
        return false;
      },

      async create(this: IHookFunctions): Promise<boolean> {
        const url = this.getNodeWebhookUrl('default');
        const body = {
          url,
          events: eventsOf(this),
          description: `n8n: ${this.getWorkflow().name ?? this.getWorkflow().id ?? 'workflow'} / ${this.getNode().name}`,
        };
        let hook: IDataObject;
        try {
          hook = (await apiRequest.call(this, 'POST', '/v1/webhooks', body)) as IDataObject;
        } catch (err) {
          // activation must fail with the service's reason (e.g. a private n8n address), not a generic text
          const s = serviceErrorOf(err);
          if (!s.message) throw new NodeApiError(this.getNode(), err as JsonObject);
          const why = (s.details ?? []).map((d) => `${d.field}: ${d.message}`).join('; ');
          throw new NodeApiError(
            this.getNode(),
            { message: s.message, code: s.code ?? '' },
            {
              message: `Paperlink refused to send events to ${String(url)}: ${why || describeServiceError(s).message}`,
              description:
                s.code === 'validation_failed'
                  ? 'A private or loopback n8n address needs WEBHOOK_ALLOW_PRIVATE=true on the Paperlink service, or a public WEBHOOK_URL for n8n.'
                  : undefined,
              httpCode: s.status ? String(s.status) : undefined,
            },
          );
        }
        if (typeof hook.id !== 'string' || typeof hook.secret !== 'string')
          throw new NodeApiError(this.getNode(), hook as JsonObject, {
            message: 'The service did not return a webhook id and secret',
          });
        const data = this.getWorkflowStaticData('node') as Subscription;
        data.webhookId = hook.id;
        data.webhookSecret = hook.secret;
        return true;
      },

      async delete(this: IHookFunctions): Promise<boolean> {
        const data = this.getWorkflowStaticData('node') as Subscription;
        if (data.webhookId) {
          try {
            await apiRequest.call(this, 'DELETE', `/v1/webhooks/${encodeURIComponent(data.webhookId)}`);
          } catch (err) {
            // already gone is what we wanted; anything else must be seen
            if ((err as { httpCode?: string }).httpCode !== '404')
              throw new NodeApiError(this.getNode(), err as JsonObject);
          }
        }
        delete data.webhookId;
        delete data.webhookSecret;
        return true;
      },
    },
  };

  async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
    const req = this.getRequestObject() as unknown as {
      rawBody?: Buffer;
      body: unknown;
      headers: Record<string, string | string[] | undefined>;
    };
    const data = this.getWorkflowStaticData('node') as Subscription;
    const raw = req.rawBody ?? Buffer.from(JSON.stringify(req.body ?? {}));
    const header = req.headers[SIGNATURE_HEADER];
    const check = data.webhookSecret
      ? verify(data.webhookSecret, raw, Array.isArray(header) ? header[0] : header)
      : ({ ok: false, reason: 'missing' } as const);
    if (!check.ok) {
      this.getResponseObject()
        .status(401)
        .json(
          errorBody(
            'invalid_signature',
            `The Paperlink-Signature header does not verify (${check.reason}); the delivery was ignored.`,
          ),
        );
      return { noWebhookResponse: true };
    }
    const event = this.getBodyData();
    const item: { json: IDataObject; binary?: Record<string, IBinaryData> } = { json: event };
    const options = this.getNodeParameter('options', {}) as { attachPdf?: boolean; binaryPropertyName?: string };
    const object = ((event.data as IDataObject | undefined)?.object ?? {}) as IDataObject;
    const documentId =
      event.type === 'document.generated'
        ? object.id
        : event.type === 'postcard.rendered'
          ? object.document_id
          : undefined;
    if (options.attachPdf && typeof documentId === 'string') {
      item.binary = { [options.binaryPropertyName || 'data']: (await downloadPdf.call(this, documentId)).binary };
    }
    return { workflowData: [[item]] };
  }
}
