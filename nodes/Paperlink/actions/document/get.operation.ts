import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [locator('document', { resource: ['document'], operation: ['get'] })];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(this, 'GET', pathOf('document', idOf(this, 'document', i)))) as IDataObject,
    pairedItem: { item: i },
  };
}
