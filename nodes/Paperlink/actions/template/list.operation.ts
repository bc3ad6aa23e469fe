import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields } from '../common';

export const description: INodeProperties[] = listFields({ resource: ['template'], operation: ['list'] });

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  const limit = this.getNodeParameter('returnAll', i, false) ? undefined : Number(this.getNodeParameter('limit', i, 50));
  return (await listAll.call(this, '/v1/templates', limit)).map((json) => ({ json, pairedItem: { item: i } }));
}
