import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields, listLimit } from '../common';

export const description: INodeProperties[] = listFields({ resource: ['template'], operation: ['list'] });

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  return (await listAll.call(this, '/v1/templates', listLimit(this, i))).map((json) => ({
    json,
    pairedItem: { item: i },
  }));
}
