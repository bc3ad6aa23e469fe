import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';
import { linkFields, linkSettings } from '../linkSettings';

const show = { resource: ['magicLink'], operation: ['create'] };

export const description: INodeProperties[] = [
  locator('document', show, 'The stored document to share'),
  ...linkFields(show),
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  return {
    json: (await apiRequest.call(
      this,
      'POST',
      pathOf('document', idOf(this, 'document', i), '/magic_links'),
      linkSettings(this, i),
    )) as IDataObject,
    pairedItem: { item: i },
  };
}
