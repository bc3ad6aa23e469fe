import {
  NodeApiError,
  NodeConnectionTypes,
  type IDataObject,
  type IHookFunctions,
  type INodeType,
  type INodeTypeDescription,
  type IWebhookFunctions,
  type IWebhookResponseData,
  type JsonObject,
} from 'n8n-workflow';
import { errorBody } from '../../src/errors';
import { EVENT_TYPES } from '../../src/events';
import { SIGNATURE_HEADER, verify } from '../../src/webhooks/signature';
import { apiRequest } from '../Paperlink/transport';

const label = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => (w === 'magic' ? 'Magic' : w === 'link' ? 'Link' : w[0].toUpperCase() + w.slice(1)))
    .join(' ');

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
    subtitle: '={{$parameter["events"].join(", ")}}',
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
        description: 'The events that start the workflow',
        options: [{ name: 'Any Event', value: '*' }, ...EVENT_TYPES.map((t) => ({ name: label(t), value: t }))],
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
          hook = (await apiRequest.call(this, 'GET', `/v1/webhooks/${encodeURIComponent(data.webhookId)}`)) as IDataObject;
        } catch (err) {
          if ((err as { httpCode?: string }).httpCode === '404') {
            delete data.webhookId;
            delete data.webhookSecret;
            return false;
          }
          throw new NodeApiError(this.getNode(), err as JsonObject);
        }
        const events = [...(this.getNodeParameter('events') as string[])].sort();
        const same = hook.url === this.getNodeWebhookUrl('default') && JSON.stringify([...(hook.events as string[])].sort()) === JSON.stringify(events.includes('*') ? ['*'] : events);
        if (same) return true;
        // changed in the editor: replace it
        await apiRequest.call(this, 'DELETE', `/v1/webhooks/${encodeURIComponent(data.webhookId)}`);
        delete data.webhookId;
        delete data.webhookSecret;
        return false;
      },

      async create(this: IHookFunctions): Promise<boolean> {
        const events = this.getNodeParameter('events') as string[];
        const body = { url: this.getNodeWebhookUrl('default'), events: events.includes('*') ? '*' : events, description: `n8n: ${this.getWorkflow().name ?? this.getWorkflow().id ?? 'workflow'} / ${this.getNode().name}` };
        const hook = (await apiRequest.call(this, 'POST', '/v1/webhooks', body)) as IDataObject;
        if (typeof hook.id !== 'string' || typeof hook.secret !== 'string') throw new NodeApiError(this.getNode(), hook as JsonObject, { message: 'The service did not return a webhook id and secret' });
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
            if ((err as { httpCode?: string }).httpCode !== '404') throw new NodeApiError(this.getNode(), err as JsonObject);
          }
        }
        delete data.webhookId;
        delete data.webhookSecret;
        return true;
      },
    },
  };

  async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
    const req = this.getRequestObject() as unknown as { rawBody?: Buffer; body: unknown; headers: Record<string, string | string[] | undefined> };
    const data = this.getWorkflowStaticData('node') as Subscription;
    const raw = req.rawBody ?? Buffer.from(JSON.stringify(req.body ?? {}));
    const header = req.headers[SIGNATURE_HEADER];
    const check = data.webhookSecret ? verify(data.webhookSecret, raw, Array.isArray(header) ? header[0] : header) : ({ ok: false, reason: 'missing' } as const);
    if (!check.ok) {
      this.getResponseObject().status(401).json(errorBody('invalid_signature', `The Paperlink-Signature header does not verify (${check.reason}); the delivery was ignored.`));
      return { noWebhookResponse: true };
    }
    return { workflowData: [this.helpers.returnJsonArray(this.getBodyData() as IDataObject)] };
  }
}
