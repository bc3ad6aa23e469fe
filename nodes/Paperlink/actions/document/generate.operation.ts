import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeProperties,
} from 'n8n-workflow';
import { apiRequest, baseUrl, downloadPageImage, downloadPdf } from '../../transport';
import { idOf, locator, pathOf } from '../common';
import { linkFields, linkSettings } from '../linkSettings';
import { text } from '../../text';

const show = { resource: ['document'], operation: ['generate'] };

export const description: INodeProperties[] = [
  locator('template', show, 'The template to fill'),
  {
    displayName: 'Merge Parameters From',
    name: 'mergeInput',
    type: 'options',
    noDataExpression: true,
    options: [
      {
        name: 'Field Mapper',
        value: 'mapper',
        description: "One field per variable of the template, filled below or from the item's fields",
      },
      {
        name: 'JSON',
        value: 'json',
        description: "One object of variable names and values, given whole (e.g. an earlier node's output)",
      },
    ],
    default: 'mapper',
    displayOptions: { show },
  },
  {
    displayName: 'Merge Parameters (JSON)',
    name: 'mergeParametersJson',
    type: 'json',
    default: '{}',
    required: true,
    description: 'The merge parameters as one JSON object, {"variable": "value", …}, or an expression that gives one',
    displayOptions: { show: { ...show, mergeInput: ['json'] } },
  },
  {
    displayName: 'Merge Fields',
    name: 'mergeFields',
    type: 'resourceMapper',
    noDataExpression: true,
    default: { mappingMode: 'defineBelow', value: null },
    required: true,
    typeOptions: {
      loadOptionsDependsOn: ['templateId.value'],
      resourceMapper: {
        resourceMapperMethod: 'getMergeFields',
        mode: 'add',
        fieldWords: { singular: 'merge field', plural: 'merge fields' },
        addAllFields: true,
        multiKeyMatch: false,
        supportAutoMap: true,
      },
    },
    // no mapper (and no "no merge fields" notice) until a template is chosen
    // hidden in JSON mode (not shown in mapper mode: workflows from before the JSON mode have no mergeInput)
    displayOptions: { show, hide: { templateId: [''], mergeInput: ['json'] } },
  },
  {
    displayName: 'Store Document',
    name: 'store',
    type: 'boolean',
    default: true,
    description: 'Whether to keep the PDF in Paperlink storage (the inkit_storage destination)',
    displayOptions: { show },
  },
  {
    displayName: 'Document Name',
    name: 'documentName',
    type: 'string',
    default: '',
    description: 'Name of the stored document; empty: the template name and the date',
    displayOptions: { show: { ...show, store: [true] } },
  },
  {
    displayName: 'Share by Magic Link',
    name: 'shareByMagicLink',
    type: 'boolean',
    default: false,
    description: 'Whether to e-mail an expiring link to the document (the magic_link destination)',
    displayOptions: { show },
  },
  ...linkFields({ ...show, shareByMagicLink: [true] }),
  {
    displayName: 'Options',
    name: 'options',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: { show },
    options: [
      {
        displayName: 'Append Parts',
        name: 'append',
        type: 'fixedCollection',
        default: {},
        placeholder: 'Add Part',
        typeOptions: { multipleValues: true },
        description:
          "Templates or PDFs merged after the template, in order, into one document with an outline entry per part; XML templates' page numbers run across the whole",
        options: [
          {
            displayName: 'Part',
            name: 'part',
            values: [
              {
                displayName: 'Merge Parameters (JSON)',
                name: 'mergeParameters',
                type: 'json',
                default: '{}',
                description: "The template's merge parameters, as a JSON object",
              },
              {
                displayName: 'PDF From Binary Field',
                name: 'binaryPropertyName',
                type: 'string',
                default: '',
                description: "An input item's binary field holding a PDF to merge as it is (instead of a template)",
              },
              {
                displayName: 'Template ID',
                name: 'templateId',
                type: 'string',
                default: '',
                placeholder: 'tmpl_…',
                description: 'The template of this part (or leave empty and name a PDF binary field)',
              },
              {
                displayName: 'Title',
                name: 'title',
                type: 'string',
                default: '',
                description: "Its outline entry; empty: the template's name",
              },
            ],
          },
        ],
      },
      {
        displayName: 'Attach Files From Binary Fields',
        name: 'attachBinary',
        type: 'string',
        default: '',
        placeholder: 'e.g. invoiceXml, receipt',
        description:
          "The input item's binary fields to embed in the PDF, comma-separated, each under its file name. A file named factur-x.xml with PDF Standard PDF/A-3b makes a Factur-X e-invoice.",
      },
      {
        displayName: 'Description',
        name: 'description',
        type: 'string',
        default: '',
        description: 'Kept with the document',
      },
      {
        displayName: 'PDF Properties',
        name: 'pdfMetadata',
        type: 'fixedCollection',
        default: {},
        placeholder: 'Add Property',
        description: "What the PDF says about itself, over the template's own",
        options: [
          {
            displayName: 'Properties',
            name: 'properties',
            values: [
              { displayName: 'Author', name: 'author', type: 'string', default: '' },
              { displayName: 'Keywords', name: 'keywords', type: 'string', default: '' },
              { displayName: 'Subject', name: 'subject', type: 'string', default: '' },
              { displayName: 'Title', name: 'title', type: 'string', default: '' },
            ],
          },
        ],
      },
      {
        displayName: 'PDF Standard',
        name: 'pdfStandard',
        type: 'options',
        default: '',
        description:
          'A standard the PDF must meet: PDF/A for archives and e-invoicing, PDF/UA for screen readers. XML templates meet all; HTML and Word templates the PDF/A levels.',
        options: [
          { name: 'None', value: '' },
          { name: 'PDF/A-2b', value: 'PDF/A-2b' },
          { name: 'PDF/A-2b and PDF/UA-1', value: 'PDF/A-2b+PDF/UA-1' },
          { name: 'PDF/A-3b', value: 'PDF/A-3b' },
          { name: 'PDF/A-3b and PDF/UA-1', value: 'PDF/A-3b+PDF/UA-1' },
          { name: 'PDF/UA-1', value: 'PDF/UA-1' },
        ],
      },
      {
        displayName: 'Put Output File in Field',
        name: 'binaryPropertyName',
        type: 'string',
        default: 'data',
        hint: 'The name of the output binary field to put the PDF in',
      },
      {
        displayName: 'Put Page Image in Field',
        name: 'pageImagePropertyName',
        type: 'string',
        default: 'page',
        hint: 'The name of the output binary field to put the first page image in',
      },
      {
        displayName: 'Retain For',
        name: 'retainFor',
        type: 'fixedCollection',
        default: {},
        description:
          "How long Paperlink keeps the document: then it is deleted with its PDF, and its Magic Links end. Without it, the service's default (Settings).",
        options: [
          {
            displayName: 'Span',
            name: 'span',
            values: [
              { displayName: 'Amount', name: 'amount', type: 'number', typeOptions: { minValue: 1 }, default: 30 },
              {
                displayName: 'Unit',
                name: 'unit',
                type: 'options',
                options: [
                  { name: 'Days', value: 'days' },
                  { name: 'Hours', value: 'hours' },
                  { name: 'Minutes', value: 'minutes' },
                ],
                default: 'days',
              },
            ],
          },
        ],
      },
      {
        displayName: 'Return First Page as PNG',
        name: 'returnPageImage',
        type: 'boolean',
        default: false,
        description:
          'Whether to put an image of the first page (PNG, 1240 pixels wide) into the item as binary data, for a chat or e-mail step',
      },
      {
        displayName: 'Return PDF as Binary',
        name: 'returnBinary',
        type: 'boolean',
        default: false,
        description: 'Whether to download the generated PDF into the item as binary data',
      },
      {
        displayName: 'Template Version',
        name: 'templateVersion',
        type: 'number',
        typeOptions: { minValue: 0 },
        default: 0,
        description:
          "The template version to render (Paperlink's Templates → Edit lists them); 0 renders the current one. A workflow that names one keeps rendering it when the template changes.",
      },
    ],
  },
];

/** The JSON mode's object: a JSON text or what an expression gave, which must be one object. */
function jsonParameters(ctx: IExecuteFunctions, i: number): IDataObject {
  let values: unknown = ctx.getNodeParameter('mergeParametersJson', i, '{}');
  try {
    if (typeof values === 'string') values = JSON.parse(values.trim() || '{}');
  } catch {
    values = undefined;
  }
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new NodeOperationError(ctx.getNode(), 'Merge Parameters (JSON) is not a JSON object', {
      itemIndex: i,
      description: 'Write it as {"variable": "value", …}, or use an expression that gives an object.',
    });
  return values as IDataObject;
}

/**
 * The merge parameters of item `i`: the object given whole in JSON mode, the fields mapped below,
 * or with "Map Automatically" the item's own fields that carry a variable's name. Empty fields are
 * left out, so the service names every variable still missing; lists and objects are sent as the
 * JSON text the template language reads.
 */
async function mergeParameters(
  ctx: IExecuteFunctions,
  i: number,
  templateId: string,
  variablesOf: (id: string) => Promise<string[]>,
): Promise<IDataObject> {
  let values: IDataObject;
  if (ctx.getNodeParameter('mergeInput', i, 'mapper') === 'json') {
    values = jsonParameters(ctx, i);
  } else if (ctx.getNodeParameter('mergeFields.mappingMode', i, 'defineBelow') === 'autoMapInputData') {
    const item = ctx.getInputData()[i]?.json ?? {};
    values = Object.fromEntries(
      (await variablesOf(templateId))
        .filter((v) => Object.prototype.hasOwnProperty.call(item, v))
        .map((v) => [v, item[v]]),
    );
  } else {
    values = (ctx.getNodeParameter('mergeFields.value', i, {}) as IDataObject | null) ?? {};
  }
  const out: IDataObject = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'object' ? JSON.stringify(v) : v;
  }
  return out;
}

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const templateId = idOf(this, 'template', i);
  const destinations: IDataObject = {};
  if (this.getNodeParameter('store', i, true)) {
    const name = text(this.getNodeParameter('documentName', i, '')).trim();
    destinations.inkit_storage = name ? { name } : {};
  }
  if (this.getNodeParameter('shareByMagicLink', i, false)) destinations.magic_link = linkSettings(this, i);
  const options = this.getNodeParameter('options', i, {}) as {
    returnBinary?: boolean;
    binaryPropertyName?: string;
    returnPageImage?: boolean;
    pageImagePropertyName?: string;
    description?: string;
    templateVersion?: number;
    pdfStandard?: string;
    pdfMetadata?: { properties?: IDataObject };
    retainFor?: { span?: { amount?: number; unit?: string } };
    attachBinary?: string;
    append?: {
      part?: {
        templateId?: string;
        mergeParameters?: string | IDataObject;
        binaryPropertyName?: string;
        title?: string;
      }[];
    };
  };
  const variablesOf = async (id: string) =>
    ((await apiRequest.call(this, 'GET', pathOf('template', id))) as { variables?: string[] }).variables ?? [];
  const body: IDataObject = {
    template_id: templateId,
    merge_parameters: await mergeParameters(this, i, templateId, variablesOf),
    destinations,
  };
  if (options.description) body.description = options.description;
  if (options.templateVersion) body.template_version = Math.trunc(Number(options.templateVersion));
  if (options.pdfStandard) body.pdf_standard = options.pdfStandard;
  const span = options.retainFor?.span;
  if (span) body.retain_for = { [text(span.unit)]: Number(span.amount) };
  // empty properties are left out, so the template's own stay
  const properties = Object.entries(options.pdfMetadata?.properties ?? {}).filter(([, v]) => text(v).trim());
  if (properties.length) body.pdf_metadata = Object.fromEntries(properties);
  const parts = options.append?.part ?? [];
  if (parts.length)
    body.append = await Promise.all(
      parts.map(async (p, n) => {
        const title = text(p.title).trim();
        const field = text(p.binaryPropertyName).trim();
        if (field && !text(p.templateId).trim()) {
          this.helpers.assertBinaryData(i, field);
          const pdf = (await this.helpers.getBinaryDataBuffer(i, field)).toString('base64');
          return { pdf, ...(title ? { title } : {}) };
        }
        // sent as given: the service names what is wrong with a part (append[0].merge_parameters…)
        let values: unknown = p.mergeParameters ?? {};
        try {
          if (typeof values === 'string') values = JSON.parse(values || '{}');
        } catch {
          values = undefined;
        }
        if (typeof values !== 'object' || values === null || Array.isArray(values))
          throw new NodeOperationError(
            this.getNode(),
            `Append Parts: the Merge Parameters of part ${n + 1} are not a JSON object`,
            {
              itemIndex: i,
              description: 'Write them as {"name": "value", …}, or use an expression that gives an object.',
            },
          );
        return { template_id: text(p.templateId).trim(), merge_parameters: values, ...(title ? { title } : {}) };
      }),
    );
  const fields = (options.attachBinary ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  if (fields.length)
    body.attachments = await Promise.all(
      fields.map(async (field) => {
        const file = this.helpers.assertBinaryData(i, field);
        return {
          name: file.fileName || field,
          content: (await this.helpers.getBinaryDataBuffer(i, field)).toString('base64'),
          ...(file.mimeType ? { mime_type: file.mimeType } : {}),
        };
      }),
    );
  // one key per execution, node, run and item: n8n's Retry On Fail gets the first answer again, never a second document
  const idempotencyKey = `n8n:${this.getExecutionId()}:${this.getNode().id}:${String(this.getWorkflowDataProxy(i).$runIndex)}:${i}`;
  const result = (await apiRequest.call(this, 'POST', '/v1/generate', body, undefined, {
    headers: { 'Idempotency-Key': idempotencyKey },
  })) as IDataObject;
  // where the PDF is fetched from (with the API key) and, when a link was made, the link to send on
  const documentId = text(result.document_id);
  const link = (result.destinations as { magic_link?: { url?: string } } | undefined)?.magic_link;
  const json: IDataObject = {
    ...result,
    download_url: `${await baseUrl(this)}/v1/documents/${encodeURIComponent(documentId)}/pdf`,
    ...(link?.url ? { magic_link_url: link.url } : {}),
  };
  const item: INodeExecutionData = { json, pairedItem: { item: i } };
  if (options.returnBinary) {
    const { binary } = await downloadPdf.call(this, documentId);
    item.binary = { [options.binaryPropertyName || 'data']: binary };
  }
  if (options.returnPageImage)
    item.binary = {
      ...item.binary,
      [options.pageImagePropertyName || 'page']: await downloadPageImage.call(this, documentId, 1),
    };
  return item;
}
