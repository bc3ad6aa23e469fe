/** HTTP to the Paperlink service: every request with the Paperlink API credential, every failure as a NodeApiError with the service's own message and field details. */
import {
  NodeApiError,
  type IBinaryData,
  type IDataObject,
  type IExecuteFunctions,
  type IHookFunctions,
  type IHttpRequestMethods,
  type IHttpRequestOptions,
  type ILoadOptionsFunctions,
  type IWebhookFunctions,
  type JsonObject,
} from 'n8n-workflow';

import { pdfFileName } from './actions/common';
import { text } from './text';

type Context = IExecuteFunctions | ILoadOptionsFunctions | IHookFunctions | IWebhookFunctions;

export interface ServiceError {
  status?: number;
  code?: string;
  message?: string;
  details?: { field: string; message: string; code?: string }[];
}

/** The `{ error: { code, message, details } }` body of a failed request, wherever n8n's HTTP helper put it. */
export function serviceError(err: unknown): ServiceError {
  const e = err as {
    response?: { status?: number; statusCode?: number; data?: unknown; body?: unknown };
    cause?: unknown;
    httpCode?: string | null;
    context?: { data?: unknown };
  };
  const response = e?.response ?? (e?.cause as { response?: typeof e.response } | undefined)?.response;
  // n8n's helpers throw a NodeApiError that keeps the parsed answer in context.data
  let body: unknown = e?.context?.data ?? response?.data ?? response?.body;
  if (Buffer.isBuffer(body) || body instanceof ArrayBuffer) body = Buffer.from(body as ArrayBuffer).toString('utf8');
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  const error = (body as { error?: ServiceError } | undefined)?.error;
  const status = response?.status ?? response?.statusCode ?? (e?.httpCode ? Number(e.httpCode) : undefined);
  return { status, ...(error ?? {}) };
}

export function describeServiceError(s: ServiceError): { message: string; description?: string } {
  const details = (s.details ?? []).map((d) => `${d.field}: ${d.message}`).join('; ');
  return {
    message: s.message
      ? `${s.message}${s.code ? ` (${s.code})` : ''}`
      : 'The Paperlink service did not answer as expected',
    description: details || undefined,
  };
}

export async function baseUrl(ctx: Context): Promise<string> {
  const credentials = await ctx.getCredentials('paperlinkApi');
  return text(credentials.baseUrl).replace(/\/+$/, '');
}

export async function apiRequest(
  this: Context,
  method: IHttpRequestMethods,
  path: string,
  body?: IDataObject,
  qs?: IDataObject,
  options: { binary?: boolean; headers?: Record<string, string> } = {},
): Promise<unknown> {
  const request: IHttpRequestOptions = {
    method,
    baseURL: await baseUrl(this),
    url: path,
    qs,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(body ? { body } : {}),
    ...(options.binary ? { encoding: 'arraybuffer', json: false } : { json: true }),
  };
  try {
    return await this.helpers.httpRequestWithAuthentication.call(this, 'paperlinkApi', request);
  } catch (err) {
    throw apiError(this, err);
  }
}

/** The service's error behind a NodeApiError that apiRequest threw (its code, message and field details). */
export function serviceErrorOf(err: unknown): ServiceError {
  const response = (err as { errorResponse?: { error?: ServiceError } }).errorResponse;
  return response?.error ?? serviceError(err);
}

/**
 * The NodeApiError for a failed request, with the service's message and field details. n8n's
 * helpers already throw a NodeApiError with a generic text; the service's answer is in its cause.
 */
export function apiError(ctx: Pick<Context, 'getNode'>, err: unknown): NodeApiError {
  const s = serviceError(err);
  const text = describeServiceError(s);
  const httpCode = s.status ? String(s.status) : undefined;
  if (!s.message)
    return err instanceof NodeApiError ? err : new NodeApiError(ctx.getNode(), err as JsonObject, { httpCode });
  return new NodeApiError(
    ctx.getNode(),
    {
      message: text.message,
      description: text.description ?? '',
      httpCode: httpCode ?? '',
      error: s as unknown as JsonObject,
    },
    { ...text, httpCode },
  );
}

/** Every item of a list endpoint, following `starting_after`, or the first `limit`; `filters` go into the query. */
export async function listAll(
  this: IExecuteFunctions | ILoadOptionsFunctions,
  path: string,
  limit?: number,
  filters: IDataObject = {},
): Promise<IDataObject[]> {
  const out: IDataObject[] = [];
  let after: string | undefined;
  for (;;) {
    const page = (await apiRequest.call(this, 'GET', path, undefined, {
      ...filters,
      limit: Math.min(100, limit ?? 100),
      ...(after ? { starting_after: after } : {}),
    })) as { data: IDataObject[]; has_more: boolean };
    out.push(...page.data);
    if (!page.has_more || (limit !== undefined && out.length >= limit) || page.data.length === 0) break;
    after = text(page.data[page.data.length - 1].id);
  }
  return limit === undefined ? out : out.slice(0, limit);
}

/** A stored document and its PDF as n8n binary data, under the document's name (`Welcome letter.pdf`). */
/** A document's page (from 1) as a PNG image (GET /v1/documents/:id/pages/:page). */
export async function downloadPageImage(this: IExecuteFunctions, id: string, page: number): Promise<IBinaryData> {
  const png = (await apiRequest.call(
    this,
    'GET',
    `/v1/documents/${encodeURIComponent(id)}/pages/${page}`,
    undefined,
    undefined,
    { binary: true },
  )) as ArrayBuffer;
  return this.helpers.prepareBinaryData(Buffer.from(png), `${id}-page-${page}.png`, 'image/png');
}

export async function downloadPdf(
  this: IExecuteFunctions | IWebhookFunctions,
  id: string,
): Promise<{ document: IDataObject; binary: IBinaryData }> {
  const document = (await apiRequest.call(this, 'GET', `/v1/documents/${encodeURIComponent(id)}`)) as IDataObject;
  const pdf = (await apiRequest.call(this, 'GET', `/v1/documents/${encodeURIComponent(id)}/pdf`, undefined, undefined, {
    binary: true,
  })) as ArrayBuffer;
  return {
    document,
    binary: await this.helpers.prepareBinaryData(Buffer.from(pdf), pdfFileName(document.name, id), 'application/pdf'),
  };
}
