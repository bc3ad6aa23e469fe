import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [locator('postcard', { resource: ['postcard'], operation: ['get'] })];

/** Status, the normalised contact and address, custom data, the document and a failure's reason. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(this, 'GET', pathOf('postcard', idOf(this, 'postcard', i)))) as IDataObject,
    pairedItem: { item: i },
  };
}
