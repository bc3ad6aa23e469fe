import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idField } from '../common';

export const description: INodeProperties[] = [idField('Document ID', 'documentId', { resource: ['document'], operation: ['get'] }, 'doc_…')];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('documentId', i)));
  return { json: (await apiRequest.call(this, 'GET', `/v1/documents/${id}`)) as IDataObject, pairedItem: { item: i } };
}
