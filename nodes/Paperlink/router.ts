/** Runs the chosen operation on every input item, one at a time, honouring Continue On Fail. */
import { NodeApiError, NodeOperationError, type IExecuteFunctions, type INodeExecutionData } from 'n8n-workflow';
import * as document from './actions/document';
import * as magicLink from './actions/magicLink';
import * as postcard from './actions/postcard';
import * as template from './actions/template';

type Operation = (this: IExecuteFunctions, i: number) => Promise<INodeExecutionData | INodeExecutionData[]>;
const operations: Record<string, Record<string, Operation>> = {
  document: document.operations,
  magicLink: magicLink.operations,
  template: template.operations,
  postcard: postcard.operations,
};

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
  const items = this.getInputData();
  const out: INodeExecutionData[] = [];
  for (let i = 0; i < items.length; i++) {
    const resource = this.getNodeParameter('resource', i);
    const operation = this.getNodeParameter('operation', i);
    try {
      const run = operations[resource]?.[operation];
      if (!run)
        throw new NodeOperationError(this.getNode(), `The operation "${operation}" of "${resource}" is not known`, {
          itemIndex: i,
        });
      const result = await run.call(this, i);
      out.push(...(Array.isArray(result) ? result : [result]));
    } catch (error) {
      if (this.continueOnFail()) {
        const e = error as { message?: string; description?: string; httpCode?: string };
        out.push({
          json: {
            error: e.message ?? String(error),
            ...(e.description ? { description: e.description } : {}),
            ...(e.httpCode ? { httpCode: e.httpCode } : {}),
          },
          pairedItem: { item: i },
        });
        continue;
      }
      throw withItem(this, error, i);
    }
  }
  return [out];
}

/** The error with its item: n8n's errors keep it in context.itemIndex (wrapping an existing one would return it unchanged, without it). */
function withItem(ctx: IExecuteFunctions, error: unknown, i: number): NodeApiError | NodeOperationError {
  if (error instanceof NodeApiError || error instanceof NodeOperationError) {
    error.context.itemIndex = i;
    return error;
  }
  return new NodeOperationError(ctx.getNode(), error as Error, { itemIndex: i });
}
