import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idField } from '../common';
import { linkFields, linkSettings } from '../linkSettings';

const show = { resource: ['magicLink'], operation: ['create'] };

export const description: INodeProperties[] = [idField('Document ID', 'documentId', show, 'doc_…'), ...linkFields(show)];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('documentId', i)));
  return { json: (await apiRequest.call(this, 'POST', `/v1/documents/${id}/magic_links`, linkSettings(this, i))) as IDataObject, pairedItem: { item: i } };
}
