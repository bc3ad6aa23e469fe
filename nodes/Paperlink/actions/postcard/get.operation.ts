import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idField } from '../common';

export const description: INodeProperties[] = [idField('Postcard ID', 'postcardId', { resource: ['postcard'], operation: ['get'] }, 'pc_…')];

/** Status, the normalised contact and address, custom data, the document and a failure's reason. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('postcardId', i)));
  return { json: (await apiRequest.call(this, 'GET', `/v1/postcards/${id}`)) as IDataObject, pairedItem: { item: i } };
}
