import {
  NodeConnectionTypes,
  type IDataObject,
  type IHookFunctions,
  type INodeType,
  type INodeTypeDescription,
  type IWebhookFunctions,
  type IWebhookResponseData,
} from 'n8n-workflow';
import { errorBody, type ErrorCode } from '../../src/errors';
import { checkPostcard } from '../../src/postcards/rules';
import { sameHash, sha256 } from '../../src/secrets';
import { text } from '../Paperlink/text';
import { apiError } from '../Paperlink/transport';

interface RawRequest {
  rawBody?: Buffer;
  readRawBody?: () => Promise<void>;
}

/** The request's JSON, parsed here from the raw bytes n8n left unparsed (or n8n's parse, where it did parse). */
async function jsonBody(req: RawRequest, parsed: () => unknown): Promise<unknown> {
  if (!req.rawBody && typeof req.readRawBody === 'function') await req.readRawBody();
  if (!req.rawBody) return parsed();
  return JSON.parse(req.rawBody.toString('utf8').replace(/^\uFEFF/, '')) as unknown;
}

/**
 * Makes this workflow the postcard webhook itself (spec 4.2): the token travels in the body and is
 * checked against the credential, the request is checked with the service's own rules, and the
 * answer is 202 with no body, or the error the service would give.
 */
export class PostcardIntakeTrigger implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Postcard Intake Trigger',
    name: 'postcardIntakeTrigger',
    icon: { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' },
    group: ['trigger'],
    version: 1,
    subtitle: '=POST {{$parameter["path"]}}',
    description:
      'Takes postcard requests (contact, address, template ID and token in the body) and starts the workflow with each valid one',
    defaults: { name: 'Postcard Intake Trigger' },
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: 'paperlinkPostcardTokenApi', required: true }],
    webhooks: [{ name: 'default', httpMethod: 'POST', responseMode: 'onReceived', path: '={{$parameter["path"]}}' }],
    properties: [
      {
        displayName: 'Path',
        name: 'path',
        type: 'string',
        default: 'postcards',
        required: true,
        description: 'The last part of the URL clients post to',
      },
      {
        displayName: 'Template IDs',
        name: 'templateIds',
        type: 'string',
        default: '',
        placeholder: 'tmpl_example_postcard, tmpl_…',
        description:
          'The template IDs a request may name, separated by commas; empty: any. A request naming another is refused (422 template_not_allowed).',
      },
      // n8n parses a webhook's JSON itself and answers malformed JSON with a body of its own; for
      // webhook nodes of version 1 whose options.binaryData is set, it leaves the body to the node,
      // which answers in the service's error shape
      { displayName: 'Body', name: 'options', type: 'hidden', default: { binaryData: true } },
    ],
  };

  /**
   * Nothing is registered elsewhere (this workflow is the webhook), but activation checks the
   * credential's token with the service (`POST <intake>/token`): a token revoked in Paperlink, or
   * mistyped, fails activation with the service's reason rather than taking postcards Paperlink
   * would refuse. n8n checks again at every activation and start (checkExists is false).
   */
  webhookMethods = {
    default: {
      async checkExists(this: IHookFunctions): Promise<boolean> {
        return false;
      },
      async create(this: IHookFunctions): Promise<boolean> {
        const { intakeUrl } = await this.getCredentials<{ intakeUrl: string }>('paperlinkPostcardTokenApi');
        const url = `${text(intakeUrl).replace(/\/+$/, '')}/token`;
        try {
          // the credential's authenticate block adds api_token to the body
          await this.helpers.httpRequestWithAuthentication.call(this, 'paperlinkPostcardTokenApi', {
            method: 'POST',
            url,
            body: {},
            json: true,
          });
        } catch (err) {
          const failure = apiError(this, err);
          failure.message = `Paperlink did not accept the credential's postcard token at ${url}: ${failure.message}`;
          failure.description =
            'Check the token (npx paperlink tokens list) and the Intake URL of the Paperlink Postcard Token API credential.';
          throw failure;
        }
        return true;
      },
      async delete(this: IHookFunctions): Promise<boolean> {
        return true;
      },
    },
  };

  async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
    const req = this.getRequestObject();
    const res = this.getResponseObject();
    const refuse = (
      status: number,
      code: ErrorCode,
      message: string,
      details: { field: string; message: string; code?: string }[] = [],
    ) => {
      res.status(status).json(errorBody(code, message, details));
      return { noWebhookResponse: true };
    };
    if (!/^application\/(.+\+)?json\b/i.test(String(req.headers['content-type'] ?? ''))) {
      return refuse(
        415,
        'unsupported_media_type',
        'This endpoint takes a JSON body: send it with Content-Type: application/json.',
      );
    }
    let body: unknown;
    try {
      body = await jsonBody(req, () => this.getBodyData());
    } catch {
      return refuse(400, 'malformed_json', 'The body is not valid JSON: send one JSON object.');
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      return refuse(400, 'malformed_json', 'The body must be a JSON object.');

    // the credential first: without it, say nothing about the rest
    const { token } = await this.getCredentials('paperlinkPostcardTokenApi');
    const given = (body as IDataObject).api_token;
    if (typeof given !== 'string' || !token || !sameHash(sha256(given), sha256(text(token)))) {
      return refuse(401, 'unauthorized', 'A valid postcard token is required in the api_token field of the body.');
    }
    const checked = checkPostcard(body);
    if (!checked.ok)
      return refuse(
        422,
        'validation_failed',
        'The postcard request is not valid; see details for each field to fix.',
        checked.details,
      );
    const allowed = text(this.getNodeParameter('templateIds', '') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    // the template may well exist in Paperlink: what refuses it is this node's list, so the answer names the list
    if (allowed.length && !allowed.includes(checked.value.template_id)) {
      const list = allowed.join(', ');
      return refuse(
        422,
        'template_not_allowed',
        `This intake takes only the templates on its list (${list}); ${JSON.stringify(checked.value.template_id)} is not on it. Use one of them, or add it to the Postcard Intake Trigger's Template IDs.`,
        [{ field: 'template_id', message: `not one of this intake's templates: ${list}`, code: 'not_allowed' }],
      );
    }
    res.status(202).end();
    const { template_id, contact, address, custom } = checked.value;
    return {
      noWebhookResponse: true,
      workflowData: [[{ json: { template_id, contact, address, custom } }]],
    };
  }
}
