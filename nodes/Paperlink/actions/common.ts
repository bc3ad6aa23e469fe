/** Fields several operations share. */
import type { IDisplayOptions, INodeProperties } from 'n8n-workflow';

export const idField = (displayName: string, name: string, show: NonNullable<IDisplayOptions['show']>, placeholder: string): INodeProperties => ({
  displayName,
  name,
  type: 'string',
  default: '',
  required: true,
  placeholder,
  displayOptions: { show },
});

/** The template picker, filled from the service's templates. */
export const templateField = (show: NonNullable<IDisplayOptions['show']>, description: string): INodeProperties => ({
  displayName: 'Template Name or ID',
  name: 'templateId',
  type: 'options',
  typeOptions: { loadOptionsMethod: 'getTemplates' },
  default: '',
  required: true,
  description: `${description}Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.`,
  displayOptions: { show },
});

export const listFields = (show: NonNullable<IDisplayOptions['show']>): INodeProperties[] => [
  {
    displayName: 'Return All',
    name: 'returnAll',
    type: 'boolean',
    default: false,
    description: 'Whether to return all results or only up to a given limit',
    displayOptions: { show },
  },
  {
    displayName: 'Limit',
    name: 'limit',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 50,
    description: 'Max number of results to return',
    displayOptions: { show: { ...show, returnAll: [false] } },
  },
];
