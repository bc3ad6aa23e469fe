import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';

export const description: INodeProperties[] = [
  locator('magicLink', { resource: ['magicLink'], operation: ['expire'] }),
];

/** Revokes the link at once. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(
      this,
      'POST',
      pathOf('magicLink', idOf(this, 'magicLink', i), '/expire'),
    )) as IDataObject,
    pairedItem: { item: i },
  };
}
