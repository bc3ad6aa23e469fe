/**
 * Runs our n8n nodes in n8n's own engine (n8n-core's WorkflowExecute, HookContext, WebhookContext,
 * LoadOptionsContext), without an n8n server: n8n does not publish its test harness, so this is a
 * small one. Credentials are kept in memory; generic credential authentication (our
 * `authenticate` block) is resolved as n8n resolves it. Webhooks are served by a real express
 * server, as n8n's webhook server would.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Container } from '@n8n/di';
import express from 'express';
import {
  BinaryDataService,
  ExecutionLifecycleHooks,
  HookContext,
  LoadOptionsContext,
  WebhookContext,
  WorkflowExecute,
} from 'n8n-core';
import {
  ICredentialsHelper,
  Workflow,
  type IBinaryData,
  type ICredentialDataDecryptedObject,
  type ICredentials,
  type IDataObject,
  type IExecuteFunctions,
  type IHttpRequestOptions,
  type INode,
  type INodeCredentialsDetails,
  type INodeExecutionData,
  type INodeType,
  type INodeTypes,
  type IRun,
  type IWebhookData,
  type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';
import { PaperlinkApi } from '../../credentials/PaperlinkApi.credentials';
import { PaperlinkPostcardTokenApi } from '../../credentials/PaperlinkPostcardTokenApi.credentials';
import { Paperlink } from '../../nodes/Paperlink/Paperlink.node';
import { PaperlinkTrigger } from '../../nodes/PaperlinkTrigger/PaperlinkTrigger.node';
import { PostcardIntakeTrigger } from '../../nodes/PostcardIntakeTrigger/PostcardIntakeTrigger.node';

/** A start node that emits the items it is given (n8n's Manual Trigger lives in nodes-base). */
class Start implements INodeType {
  description = {
    displayName: 'Start',
    name: 'start',
    group: ['input'],
    version: 1,
    description: '',
    defaults: { name: 'Start' },
    inputs: [],
    outputs: ['main'],
    properties: [{ displayName: 'Items', name: 'items', type: 'json', default: '[]' }],
  } as unknown as INodeType['description'];
  /** Items are JSON; an item's `$binary` ({ field: { base64, fileName, mimeType } }) becomes its binary data. */
  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    const items = JSON.parse(this.getNodeParameter('items', 0) as string) as (IDataObject & {
      $binary?: Record<string, { base64: string; fileName: string; mimeType: string }>;
    })[];
    return [
      await Promise.all(
        items.map(async ({ $binary, ...json }) => {
          if (!$binary) return { json };
          const binary: Record<string, IBinaryData> = {};
          for (const [field, b] of Object.entries($binary))
            binary[field] = await this.helpers.prepareBinaryData(
              Buffer.from(b.base64, 'base64'),
              b.fileName,
              b.mimeType,
            );
          return { json, binary };
        }),
      ),
    ];
  }
}

const TYPES: Record<string, INodeType> = {
  'test.start': new Start(),
  'n8n-nodes-paperlink.paperlink': new Paperlink(),
  'n8n-nodes-paperlink.paperlinkTrigger': new PaperlinkTrigger(),
  'n8n-nodes-paperlink.postcardIntakeTrigger': new PostcardIntakeTrigger(),
};
const CREDENTIAL_TYPES = {
  paperlinkApi: new PaperlinkApi(),
  paperlinkPostcardTokenApi: new PaperlinkPostcardTokenApi(),
};

class NodeTypes implements INodeTypes {
  getByName(name: string): INodeType {
    return TYPES[name];
  }
  getByNameAndVersion(name: string): INodeType {
    const type = TYPES[name];
    if (!type) throw new Error(`unknown node type ${name}`);
    return type;
  }
  getKnownTypes() {
    return {};
  }
}

/** Credentials by type, in memory; `authenticate` applies the credential type's generic block. */
class Credentials extends ICredentialsHelper {
  constructor(readonly store: Record<string, ICredentialDataDecryptedObject>) {
    super();
  }
  getParentTypes(): string[] {
    return [];
  }
  async authenticate(
    credentials: ICredentialDataDecryptedObject,
    typeName: string,
    requestOptions: IHttpRequestOptions,
  ): Promise<IHttpRequestOptions> {
    const type = CREDENTIAL_TYPES[typeName as keyof typeof CREDENTIAL_TYPES] as {
      authenticate?: { properties: { headers?: Record<string, string>; body?: Record<string, string> } };
    };
    const resolve = (block: Record<string, string> = {}) =>
      Object.fromEntries(
        Object.entries(block).map(([k, v]) => [
          k,
          v.replace(/^=\{\{\s*\$credentials\.(\w+)\s*\}\}$/, (_, c: string) => {
            const value = credentials[c];
            return typeof value === 'string' ? value : '';
          }),
        ]),
      );
    const { headers, body } = type.authenticate?.properties ?? {};
    return {
      ...requestOptions,
      headers: { ...(requestOptions.headers ?? {}), ...resolve(headers) },
      ...(body ? { body: { ...(requestOptions.body as object), ...resolve(body) } } : {}),
    };
  }
  async preAuthentication(): Promise<undefined> {
    return undefined;
  }
  async getCredentials(): Promise<ICredentials> {
    throw new Error('not used');
  }
  async getDecrypted(
    _a: IWorkflowExecuteAdditionalData,
    _n: INodeCredentialsDetails,
    type: string,
  ): Promise<ICredentialDataDecryptedObject> {
    const data = this.store[type];
    if (!data) throw new Error(`no credentials of type ${type}`);
    return data;
  }
  async updateCredentials(): Promise<void> {}
  async updateCredentialsOauthTokenData(): Promise<void> {}
  getCredentialsProperties(type: string) {
    return CREDENTIAL_TYPES[type as keyof typeof CREDENTIAL_TYPES].properties;
  }
}

let binaryReady: Promise<void> | undefined;
/** n8n keeps binary data through its BinaryDataService (files under N8N_USER_FOLDER, a temp folder here). */
function binaryData(): Promise<void> {
  process.env.N8N_USER_FOLDER ??= fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-n8n-'));
  binaryReady ??= Container.get(BinaryDataService).init();
  return binaryReady;
}

/** The bytes of a binary property, wherever n8n keeps them. */
export async function binaryBytes(binary: IBinaryData): Promise<Buffer> {
  await binaryData();
  return Container.get(BinaryDataService).getAsBuffer(binary);
}

function additionalData(credentials: Credentials, hooks?: ExecutionLifecycleHooks): IWorkflowExecuteAdditionalData {
  return {
    credentialsHelper: credentials,
    hooks,
    executeWorkflow: async () => {
      throw new Error('not used');
    },
    getRunExecutionData: async () => undefined,
    currentNodeExecutionIndex: 0,
    restApiUrl: 'http://localhost:5678/rest',
    instanceBaseUrl: 'http://localhost:5678',
    formWaitingBaseUrl: 'http://localhost:5678/form-waiting',
    webhookBaseUrl: 'http://localhost:5678/webhook',
    webhookWaitingBaseUrl: 'http://localhost:5678/webhook-waiting',
    webhookTestBaseUrl: 'http://localhost:5678/webhook-test',
    variables: {},
    logAiEvent: () => undefined,
    startRunnerTask: async () => {
      throw new Error('not used');
    },
  } as unknown as IWorkflowExecuteAdditionalData;
}

let executions = 0;
const credentialRefs = {
  paperlinkApi: { id: '1', name: 'Paperlink' },
  paperlinkPostcardTokenApi: { id: '2', name: 'Postcard token' },
};

export interface RunResult {
  run: IRun;
  /** The items our node output (its first run, first output). */
  items: INodeExecutionData[];
  error?: Error;
}

/** Runs Start (with `input`) → a Paperlink node with these parameters, in n8n's WorkflowExecute. */
export async function runPaperlink(
  parameters: IDataObject,
  input: IDataObject[],
  store: Record<string, ICredentialDataDecryptedObject>,
  options: { continueOnFail?: boolean; retryOnFail?: boolean } = {},
): Promise<RunResult> {
  await binaryData();
  const nodes: INode[] = [
    {
      id: 's',
      name: 'Start',
      type: 'test.start',
      typeVersion: 1,
      position: [0, 0],
      parameters: { items: JSON.stringify(input) },
    },
    {
      id: 'p',
      name: 'Paperlink',
      type: 'n8n-nodes-paperlink.paperlink',
      typeVersion: 1,
      position: [200, 0],
      parameters: parameters as INode['parameters'],
      credentials: credentialRefs,
      ...(options.continueOnFail ? { onError: 'continueRegularOutput' as const } : {}),
      ...(options.retryOnFail ? { retryOnFail: true, maxTries: 2, waitBetweenTries: 0 } : {}),
    },
  ];
  const workflow = new Workflow({
    id: 'w1',
    name: 'test',
    nodes,
    connections: { Start: { main: [[{ node: 'Paperlink', type: 'main', index: 0 }]] } },
    active: false,
    nodeTypes: new NodeTypes(),
    settings: { executionOrder: 'v1' },
  });
  const hooks = new ExecutionLifecycleHooks('manual', 'e1', {
    id: 'w1',
    name: 'test',
    nodes,
    connections: {},
    active: false,
    settings: {},
    createdAt: new Date(),
    updatedAt: new Date(),
    isArchived: false,
  } as never);
  executions += 1;
  const data = { ...additionalData(new Credentials(store), hooks), executionId: `e${executions}` };
  const run = await new WorkflowExecute(data, 'manual').run({ workflow, startNode: nodes[0] });
  const task = run.data.resultData.runData.Paperlink?.[0];
  return {
    run,
    items: task?.data?.main?.[0] ?? [],
    error: (task?.error ?? run.data.resultData.error) as Error | undefined,
  };
}

/** Loads a node's dynamic options or resource-mapper fields as the editor would. */
export function loadOptionsContext(parameters: IDataObject, store: Record<string, ICredentialDataDecryptedObject>) {
  const node: INode = {
    id: 'p',
    name: 'Paperlink',
    type: 'n8n-nodes-paperlink.paperlink',
    typeVersion: 1,
    position: [0, 0],
    parameters: parameters as INode['parameters'],
    credentials: credentialRefs,
  };
  const workflow = new Workflow({
    id: 'w1',
    nodes: [node],
    connections: {},
    active: false,
    nodeTypes: new NodeTypes(),
  });
  return new LoadOptionsContext(workflow, node, additionalData(new Credentials(store)), '');
}

export interface TriggerHarness {
  /** The URL the trigger's webhook is served at. */
  url: string;
  /** The node's static data (what `getWorkflowStaticData('node')` gives it). */
  readonly staticData: IDataObject;
  /** The workflow runs the webhook started: each run's items. */
  started: INodeExecutionData[][];
  /** Calls one of the node's webhookMethods (checkExists, create, delete) as n8n does on activation. */
  hook(method: 'checkExists' | 'create' | 'delete'): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Serves a trigger node's webhook from a real HTTP server (express, as n8n's webhook server) and
 * lets a test run its activation hooks. The node's static data lives as long as the harness.
 */
export async function serveTrigger(
  type: 'paperlinkTrigger' | 'postcardIntakeTrigger',
  parameters: IDataObject,
  store: Record<string, ICredentialDataDecryptedObject>,
): Promise<TriggerHarness> {
  const credentials = new Credentials(store);
  const node: INode = {
    id: 't',
    name: 'Trigger',
    type: `n8n-nodes-paperlink.${type}`,
    typeVersion: 1,
    position: [0, 0],
    parameters: parameters as INode['parameters'],
    credentials: credentialRefs,
    webhookId: 'hook-1',
  };
  const workflow = new Workflow({
    id: 'w1',
    name: 'trigger test',
    nodes: [node],
    connections: {},
    active: true,
    nodeTypes: new NodeTypes(),
    staticData: {},
  });
  const nodeType = TYPES[node.type];
  const started: INodeExecutionData[][] = [];
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const hookPath =
    type === 'paperlinkTrigger' ? 'webhook' : typeof parameters.path === 'string' ? parameters.path : 'postcards';
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook/hook-1/${hookPath}`;
  const webhookData = {
    httpMethod: 'POST',
    node: node.name,
    path: hookPath,
    webhookDescription: nodeType.description.webhooks![0],
    workflowId: 'w1',
    workflowExecuteAdditionalData: additionalData(credentials),
    webhookId: 'hook-1',
  } as unknown as IWebhookData;
  // n8n keeps the raw bytes for signature checks and parses JSON itself, answering malformed JSON
  // with a body of its own (422), except for a version-1 webhook node whose options.binaryData is set
  // (webhook-helpers' parseRequestBody): that node gets the body unparsed
  const resolved = workflow.getNode(node.name)!;
  const leaveBody =
    resolved.typeVersion === 1 && Boolean((resolved.parameters.options as IDataObject | undefined)?.binaryData);
  app.post('/webhook/hook-1/*path', express.raw({ type: () => true, limit: '1mb' }), async (req, res) => {
    const raw = req.body as Buffer;
    (req as unknown as { rawBody: Buffer }).rawBody = raw;
    req.body = {};
    if (!leaveBody && raw.length && /json/.test(String(req.headers['content-type']))) {
      try {
        req.body = JSON.parse(raw.toString('utf8'));
      } catch {
        return res.status(422).json({ code: 422, message: 'Failed to parse request body' });
      }
    }
    const data = additionalData(credentials);
    data.httpRequest = req;
    data.httpResponse = res;
    const ctx = new WebhookContext(workflow, node, data, 'webhook', webhookData, [], null);
    const out = await nodeType.webhook!.call(ctx);
    if (out.workflowData) started.push(out.workflowData[0]);
    if (!out.noWebhookResponse && !res.headersSent) res.status(200).json({ message: 'Workflow was started' });
  });
  const hookWebhookData = {
    ...webhookData,
    webhookDescription: { ...nodeType.description.webhooks![0] },
  };
  const urlOf = () => url;
  return {
    url,
    get staticData() {
      return (workflow.staticData[`node:${node.name}`] ?? {}) as IDataObject;
    },
    started,
    hook: async (method) => {
      const ctx = new HookContext(workflow, node, additionalData(credentials), 'trigger', 'activate', hookWebhookData);
      // n8n builds the URL from its WEBHOOK_URL; here it is the harness server
      (ctx as unknown as { getNodeWebhookUrl: () => string }).getNodeWebhookUrl = urlOf;
      return nodeType.webhookMethods!.default![method].call(ctx);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
