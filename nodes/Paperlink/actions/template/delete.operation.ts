import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [
  locator('template', { resource: ['template'], operation: ['delete'] }, 'Documents made from it stay'),
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(this, 'DELETE', pathOf('template', idOf(this, 'template', i)))) as IDataObject,
    pairedItem: { item: i },
  };
}
