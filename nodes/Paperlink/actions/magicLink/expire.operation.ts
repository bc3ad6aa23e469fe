import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idField } from '../common';

export const description: INodeProperties[] = [idField('Magic Link ID', 'magicLinkId', { resource: ['magicLink'], operation: ['expire'] }, 'ml_…')];

/** Revokes the link at once. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('magicLinkId', i)));
  return { json: (await apiRequest.call(this, 'POST', `/v1/magic_links/${id}/expire`)) as IDataObject, pairedItem: { item: i } };
}
