import {
  NodeConnectionTypes,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeType,
  type INodeTypeDescription,
} from 'n8n-workflow';
import * as document from './actions/document';
import * as magicLink from './actions/magicLink';
import * as postcard from './actions/postcard';
import * as template from './actions/template';
import { searchDocuments, searchMagicLinks, searchPostcards, searchTemplates } from './methods/listSearch';
import { getMergeFields } from './methods/resourceMapping';
import { router } from './router';

export class Paperlink implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Paperlink',
    name: 'paperlink',
    icon: { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' },
    group: ['transform'],
    version: 1,
    subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
    // an action: what it does when the workflow reaches it (taking postcards in is the Postcard Intake Trigger's)
    description: 'Generate PDFs from templates, share them by expiring Magic Links, manage templates, submit postcards',
    defaults: { name: 'Paperlink' },
    usableAsTool: true,
    inputs: [NodeConnectionTypes.Main],
    outputs: [NodeConnectionTypes.Main],
    credentials: [
      { name: 'paperlinkApi', required: true },
      {
        name: 'paperlinkPostcardTokenApi',
        required: true,
        displayOptions: { show: { resource: ['postcard'], operation: ['submit'] } },
      },
    ],
    properties: [
      {
        displayName: 'Resource',
        name: 'resource',
        type: 'options',
        noDataExpression: true,
        options: [
          { name: 'Document', value: 'document' },
          { name: 'Magic Link', value: 'magicLink' },
          { name: 'Postcard', value: 'postcard' },
          { name: 'Template', value: 'template' },
        ],
        default: 'document',
      },
      ...document.description,
      ...magicLink.description,
      ...template.description,
      ...postcard.description,
    ],
  };

  methods = {
    listSearch: { searchTemplates, searchDocuments, searchMagicLinks, searchPostcards },
    resourceMapping: { getMergeFields },
  };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    return router.call(this);
  }
}
