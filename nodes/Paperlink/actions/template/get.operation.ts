import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [locator('template', { resource: ['template'], operation: ['get'] })];

/** The template with its variables. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(this, 'GET', pathOf('template', idOf(this, 'template', i)))) as IDataObject,
    pairedItem: { item: i },
  };
}
