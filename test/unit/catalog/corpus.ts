import type { CatalogEntry } from '../../../src/catalog/index.js'

/** A small fixed corpus for exact-order ranking tests. */
export const CORPUS: readonly CatalogEntry[] = [
  {
    name: 'storage_delete_bucket',
    description: 'Permanently delete a bucket and every object in it.',
    parameters: { type: 'object', properties: { bucket: { type: 'string', description: 'Bucket name.' }, force: { type: 'boolean' } }, required: ['bucket'] },
  },
  { name: 'storage_list_buckets', description: 'List the buckets of the project.', parameters: { type: 'object', properties: { limit: { type: 'integer' } } } },
  {
    name: 'storage_create_bucket',
    description: 'Create a bucket in a region.',
    parameters: { type: 'object', properties: { bucket: { type: 'string' }, region: { type: 'string', enum: ['eu-west-1', 'us-east-1'] } } },
  },
  {
    name: 'billing_export_invoices',
    description: 'Export invoices to a file and return its URL.',
    parameters: { type: 'object', properties: { format: { type: 'string', enum: ['csv', 'json'] }, since: { type: 'string', description: 'Start date.' } } },
  },
  { name: 'billing_list_invoices', description: 'List the invoices of a customer, newest first.', parameters: { type: 'object', properties: { customer_id: { type: 'string' } } } },
  { name: 'billing_get_invoice_pdf', description: 'Get a download URL for the PDF of one invoice.', parameters: { type: 'object', properties: { invoice_id: { type: 'string' } } } },
  {
    name: 'iam_assign_role',
    description: 'Assign a role to a user.',
    parameters: { type: 'object', properties: { user_id: { type: 'string' }, role: { type: 'string', enum: ['admin', 'editor', 'viewer'] } } },
  },
  { name: 'iam_revoke_role', description: 'Revoke a role from a user.', parameters: { type: 'object', properties: { user_id: { type: 'string' }, role: { type: 'string' } } } },
  { name: 'iam_list_users', description: 'List the users of the organization.' },
  { name: 'backup_restore_snapshot', description: 'Restore a volume from one of its snapshots.', parameters: { type: 'object', properties: { snapshot_id: { type: 'string' } } } },
  { name: 'backup_list_snapshots', description: 'List the snapshots of a volume.', parameters: { type: 'object', properties: { volume_id: { type: 'string' } } } },
  {
    name: 'support_count_tickets',
    description: 'Return the number of tickets matching a filter.',
    parameters: { type: 'object', properties: { customer_id: { type: 'string' }, status: { type: 'string', enum: ['open', 'pending', 'closed'] } } },
  },
  { name: 'support_list_tickets', description: 'List support tickets, newest first.', parameters: { type: 'object', properties: { status: { type: 'string' } } } },
  { name: 'listOrders', description: 'Lists orders of the shop.' },
  { name: 'getOrder', description: 'Gets one order by id.', parameters: { type: 'object', properties: { orderId: { type: 'string' } } } },
]
