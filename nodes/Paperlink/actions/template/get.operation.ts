import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { templateField } from '../common';

export const description: INodeProperties[] = [templateField({ resource: ['template'], operation: ['get'] }, '')];

/** The template with its variables. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const id = encodeURIComponent(String(this.getNodeParameter('templateId', i)));
  return { json: (await apiRequest.call(this, 'GET', `/v1/templates/${id}`)) as IDataObject, pairedItem: { item: i } };
}
