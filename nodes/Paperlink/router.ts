/** Runs the chosen operation on every input item, one at a time, honouring Continue On Fail. */
import { NodeApiError, NodeOperationError, type IExecuteFunctions, type INodeExecutionData, type JsonObject } from 'n8n-workflow';
import * as document from './actions/document';
import * as magicLink from './actions/magicLink';
import * as postcard from './actions/postcard';
import * as template from './actions/template';

type Operation = (this: IExecuteFunctions, i: number) => Promise<INodeExecutionData | INodeExecutionData[]>;
const operations: Record<string, Record<string, Operation>> = { document: document.operations, magicLink: magicLink.operations, template: template.operations, postcard: postcard.operations };

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
  const items = this.getInputData();
  const out: INodeExecutionData[] = [];
  for (let i = 0; i < items.length; i++) {
    const resource = this.getNodeParameter('resource', i) as string;
    const operation = this.getNodeParameter('operation', i) as string;
    try {
      const run = operations[resource]?.[operation];
      if (!run) throw new NodeOperationError(this.getNode(), `The operation "${operation}" of "${resource}" is not known`, { itemIndex: i });
      const result = await run.call(this, i);
      out.push(...(Array.isArray(result) ? result : [result]));
    } catch (error) {
      if (this.continueOnFail()) {
        const e = error as { message?: string; description?: string; httpCode?: string };
        out.push({ json: { error: e.message ?? String(error), ...(e.description ? { description: e.description } : {}), ...(e.httpCode ? { httpCode: e.httpCode } : {}) }, pairedItem: { item: i } });
        continue;
      }
      if (error instanceof NodeApiError) throw new NodeApiError(this.getNode(), error as unknown as JsonObject, { itemIndex: i });
      throw new NodeOperationError(this.getNode(), error as Error, { itemIndex: i });
    }
  }
  return [out];
}
