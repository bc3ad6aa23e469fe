/** The lists of the resource locators: the service's own lists, newest first, searched by name. */
import type { IDataObject, ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';
import { apiRequest, baseUrl } from '../transport';
import { KINDS, type Kind } from '../actions/common';
import { text } from '../text';

interface Page {
  data: IDataObject[];
  has_more: boolean;
  next_cursor: string | null;
}

async function search(
  ctx: ILoadOptionsFunctions,
  kind: Kind,
  name: (item: IDataObject) => string,
  filter?: string,
  paginationToken?: string,
  serverSearch = false,
): Promise<INodeListSearchResult> {
  const qs: IDataObject = {
    limit: 100,
    ...(paginationToken ? { starting_after: paginationToken } : {}),
    ...(serverSearch && filter ? { search: filter } : {}),
  };
  const page = (await apiRequest.call(ctx, 'GET', `/v1/${KINDS[kind].path}`, undefined, qs)) as Page;
  const base = await baseUrl(ctx);
  const needle = !serverSearch && filter ? filter.toLowerCase() : '';
  const web = kind === 'magicLink' ? undefined : `${base}/app/${KINDS[kind].path}`;
  return {
    results: page.data
      .map((item) => ({
        name: name(item),
        value: text(item.id),
        ...(web ? { url: `${web}/${text(item.id)}` } : {}),
      }))
      .filter((r) => !needle || r.name.toLowerCase().includes(needle) || r.value.includes(needle)),
    paginationToken: page.has_more ? (page.next_cursor ?? undefined) : undefined,
  };
}

/** What each format is called where people see it. */
const FORMATS: Record<string, string> = { xml: 'XML', html: 'HTML', docx: 'Word', pdf: 'PDF form' };

/** A template's name, and its format unless the name already says it ("Business letter (HTML)"). */
export function templateLabel(t: IDataObject): string {
  const name = text(t.name);
  const format = FORMATS[text(t.format ?? '')] ?? text(t.format ?? '');
  return !format || name.toLowerCase().includes(format.toLowerCase()) ? name : `${name} (${format})`;
}

export async function searchTemplates(
  this: ILoadOptionsFunctions,
  filter?: string,
  paginationToken?: string,
): Promise<INodeListSearchResult> {
  return search(this, 'template', templateLabel, filter, paginationToken);
}

export async function searchDocuments(
  this: ILoadOptionsFunctions,
  filter?: string,
  paginationToken?: string,
): Promise<INodeListSearchResult> {
  return search(
    this,
    'document',
    (d) => `${text(d.name)} · ${text(d.created_at ?? '').slice(0, 10)}`,
    filter,
    paginationToken,
    true,
  );
}

export async function searchMagicLinks(
  this: ILoadOptionsFunctions,
  filter?: string,
  paginationToken?: string,
): Promise<INodeListSearchResult> {
  return search(
    this,
    'magicLink',
    (l) => `${text(l.recipient_email)} · ${text(l.status)} · ${text(l.created_at ?? '').slice(0, 10)}`,
    filter,
    paginationToken,
  );
}

export async function searchPostcards(
  this: ILoadOptionsFunctions,
  filter?: string,
  paginationToken?: string,
): Promise<INodeListSearchResult> {
  return search(
    this,
    'postcard',
    (p) => {
      const c = (p.contact ?? {}) as IDataObject;
      return `${[text(c.first_name), text(c.last_name)].filter(Boolean).join(' ') || text(p.id)} · ${text(p.status)} · ${text(p.created_at ?? '').slice(0, 10)}`;
    },
    filter,
    paginationToken,
  );
}
