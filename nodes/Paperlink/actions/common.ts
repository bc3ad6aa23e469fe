/** Fields several operations share. */
import type {
  IDataObject,
  IDisplayOptions,
  IExecuteFunctions,
  ILoadOptionsFunctions,
  INodeProperties,
} from 'n8n-workflow';
import { text } from '../text';

export type Kind = 'template' | 'document' | 'magicLink' | 'postcard';

/** Each resource the node picks by id: its parameter, its API path and its id's look. */
export const KINDS: Record<Kind, { label: string; param: string; path: string; placeholder: string; search: string }> =
  {
    template: {
      label: 'Template',
      param: 'templateId',
      path: 'templates',
      placeholder: 'tmpl_…',
      search: 'searchTemplates',
    },
    document: {
      label: 'Document',
      param: 'documentId',
      path: 'documents',
      placeholder: 'doc_…',
      search: 'searchDocuments',
    },
    magicLink: {
      label: 'Magic Link',
      param: 'magicLinkId',
      path: 'magic_links',
      placeholder: 'ml_…',
      search: 'searchMagicLinks',
    },
    postcard: {
      label: 'Postcard',
      param: 'postcardId',
      path: 'postcards',
      placeholder: 'pc_…',
      search: 'searchPostcards',
    },
  };

const ID = '[a-z]+_[0-9a-z_]+';

/**
 * A resource locator for one kind: from a searchable list, by the URL of its page in the web app or
 * of its API address (e.g. https://docs.example.com/app/documents/doc_…), or by id.
 */
export function locator(kind: Kind, show: NonNullable<IDisplayOptions['show']>, description = ''): INodeProperties {
  const k = KINDS[kind];
  const url = `^https?://.+/(?:app|v1)/${k.path}/(${ID})`;
  return {
    displayName: k.label,
    name: k.param,
    type: 'resourceLocator',
    default: { mode: 'list', value: '' },
    required: true,
    description,
    displayOptions: { show },
    modes: [
      {
        displayName: 'From List',
        name: 'list',
        type: 'list',
        typeOptions: { searchListMethod: k.search, searchable: true },
      },
      {
        displayName: 'By URL',
        name: 'url',
        type: 'string',
        placeholder: `https://paperlink.example.com/app/${k.path}/${k.placeholder}`,
        validation: [
          {
            type: 'regex',
            properties: { regex: url, errorMessage: `Not the URL of a Paperlink ${k.label.toLowerCase()}` },
          },
        ],
        extractValue: { type: 'regex', regex: url },
      },
      {
        displayName: 'ID',
        name: 'id',
        type: 'string',
        placeholder: k.placeholder,
        validation: [
          { type: 'regex', properties: { regex: `^${ID}$`, errorMessage: `Not a Paperlink id (${k.placeholder})` } },
        ],
      },
    ],
  };
}

/** The id the user picked, whichever mode they picked it in (a plain string from older workflows too). */
export function idOf(ctx: IExecuteFunctions | ILoadOptionsFunctions, kind: Kind, i?: number): string {
  const param = KINDS[kind].param;
  const value =
    i === undefined
      ? (ctx as ILoadOptionsFunctions).getNodeParameter(param, '', { extractValue: true })
      : (ctx as IExecuteFunctions).getNodeParameter(param, i, '', { extractValue: true });
  return text(value ?? '').trim();
}

/** The API path of one resource, e.g. `/v1/documents/doc_…`. */
export const pathOf = (kind: Kind, id: string, rest = '') => `/v1/${KINDS[kind].path}/${encodeURIComponent(id)}${rest}`;

/** A PDF's file name from a document's name: characters no file system takes become `_`. */
export const pdfFileName = (name: unknown, id: string) =>
  `${
    text(name ?? '')
      .replace(/[\\/:*?"<>|\u0000-\u001f]+/g, '_')
      .trim() || id
  }.pdf`;

/** Return All and Limit, and with `filters` a Filters collection of them (read with listFilters). */
export const listFields = (
  show: NonNullable<IDisplayOptions['show']>,
  filters: INodeProperties[] = [],
): INodeProperties[] => [
  {
    displayName: 'Return All',
    name: 'returnAll',
    type: 'boolean',
    default: false,
    description: 'Whether to return all results or only up to a given limit',
    displayOptions: { show },
  },
  {
    displayName: 'Limit',
    name: 'limit',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 50,
    description: 'Max number of results to return',
    displayOptions: { show: { ...show, returnAll: [false] } },
  },
  ...(filters.length
    ? [
        {
          displayName: 'Filters',
          name: 'filters',
          type: 'collection' as const,
          placeholder: 'Add Filter',
          default: {},
          displayOptions: { show },
          options: filters,
        },
      ]
    : []),
];

/** The filters the user set, trimmed, for the list's query (empty ones left out). */
export function listFilters(ctx: IExecuteFunctions, i: number): IDataObject {
  const set = ctx.getNodeParameter('filters', i, {});
  return Object.fromEntries(
    Object.entries(set)
      .filter(([, v]) => text(v ?? '').trim() !== '')
      .map(([k, v]) => [k, text(v).trim()]),
  );
}

/** Return All or the Limit, as listAll takes it. */
export const listLimit = (ctx: IExecuteFunctions, i: number): number | undefined =>
  ctx.getNodeParameter('returnAll', i, false) ? undefined : Number(ctx.getNodeParameter('limit', i, 50));
