import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [locator('magicLink', { resource: ['magicLink'], operation: ['get'] })];

/** Status, views used and left, expiry and the access log. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(this, 'GET', pathOf('magicLink', idOf(this, 'magicLink', i)))) as IDataObject,
    pairedItem: { item: i },
  };
}
