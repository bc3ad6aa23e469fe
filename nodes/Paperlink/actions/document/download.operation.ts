import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idField } from '../common';

const show = { resource: ['document'], operation: ['download'] };

export const description: INodeProperties[] = [
  idField('Document ID', 'documentId', show, 'doc_…'),
  { displayName: 'Put Output File in Field', name: 'binaryPropertyName', type: 'string', default: 'data', required: true, hint: 'The name of the output binary field to put the PDF in', displayOptions: { show } },
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('documentId', i)));
  const document = (await apiRequest.call(this, 'GET', `/v1/documents/${id}`)) as IDataObject;
  const pdf = (await apiRequest.call(this, 'GET', `/v1/documents/${id}/pdf`, undefined, undefined, { binary: true })) as ArrayBuffer;
  const name = `${String(document.name).replace(/[\\/:*?"<>|]+/g, '_') || id}.pdf`;
  const property = String(this.getNodeParameter('binaryPropertyName', i, 'data'));
  return { json: document, binary: { [property]: await this.helpers.prepareBinaryData(Buffer.from(pdf), name, 'application/pdf') }, pairedItem: { item: i } };
}
