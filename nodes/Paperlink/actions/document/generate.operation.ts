import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { templateField } from '../common';
import { linkFields, linkSettings } from '../linkSettings';

const show = { resource: ['document'], operation: ['generate'] };

export const description: INodeProperties[] = [
  templateField(show, 'The template to fill. '),
  {
    displayName: 'Merge Fields',
    name: 'mergeFields',
    type: 'resourceMapper',
    noDataExpression: true,
    default: { mappingMode: 'defineBelow', value: null },
    required: true,
    typeOptions: {
      loadOptionsDependsOn: ['templateId'],
      resourceMapper: {
        resourceMapperMethod: 'getMergeFields',
        mode: 'add',
        fieldWords: { singular: 'merge field', plural: 'merge fields' },
        addAllFields: true,
        multiKeyMatch: false,
        supportAutoMap: true,
      },
    },
    displayOptions: { show },
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
      { displayName: 'Return PDF as Binary', name: 'returnBinary', type: 'boolean', default: false, description: 'Whether to download the generated PDF into the item as binary data' },
      { displayName: 'Put Output File in Field', name: 'binaryPropertyName', type: 'string', default: 'data', hint: 'The name of the output binary field to put the PDF in' },
      { displayName: 'Description', name: 'description', type: 'string', default: '', description: 'Kept with the document' },
    ],
  },
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const mapped = this.getNodeParameter('mergeFields.value', i, {}) as IDataObject | null;
  const destinations: IDataObject = {};
  if (this.getNodeParameter('store', i, true)) {
    const name = String(this.getNodeParameter('documentName', i, '')).trim();
    destinations.inkit_storage = name ? { name } : {};
  }
  if (this.getNodeParameter('shareByMagicLink', i, false)) destinations.magic_link = linkSettings(this, i);
  const options = this.getNodeParameter('options', i, {}) as { returnBinary?: boolean; binaryPropertyName?: string; description?: string };
  const body: IDataObject = { template_id: this.getNodeParameter('templateId', i), merge_parameters: mapped ?? {}, destinations };
  if (options.description) body.description = options.description;
  const result = (await apiRequest.call(this, 'POST', '/v1/generate', body)) as IDataObject;
  const item: INodeExecutionData = { json: result, pairedItem: { item: i } };
  if (options.returnBinary) {
    const pdf = (await apiRequest.call(this, 'GET', `/v1/documents/${result.document_id as string}/pdf`, undefined, undefined, { binary: true })) as ArrayBuffer;
    item.binary = { [options.binaryPropertyName || 'data']: await this.helpers.prepareBinaryData(Buffer.from(pdf), `${result.document_id as string}.pdf`, 'application/pdf') };
  }
  return item;
}
