import type { Command } from 'commander';
import { emit, inr } from '../render.js';
import type { Io } from '../io.js';
import { publicClient, withClientOptions, type ClientFlags } from '../options.js';
import type { CatalogModelView, ListOf } from './types.js';

function priceText(model: CatalogModelView): [string, string] {
  const p = model.pricing;
  if (p.per_image !== null) return [`${inr(p.per_image)}/image`, ''];
  if (p.per_minute !== null) return [`${inr(p.per_minute)}/min`, ''];
  if (p.input_per_1m_chars !== null) return [`${inr(p.input_per_1m_chars)}/1M chars`, ''];
  return [inr(p.input_per_1m), model.type === 'embedding' ? '' : inr(p.output_per_1m)];
}

export function registerModelCommands(program: Command, io: Io): void {
  const models = program.command('models').description('the model catalog');
  withClientOptions(models.command('list').description('list the catalog with INR prices per 1M tokens'))
    .option('--type <type>', 'only chat, embedding, speech, transcription or image models')
    .option('--provider <name>', 'only this provider\'s models')
    .action(async (flags: ClientFlags & { type?: string; provider?: string }) => {
      const list = await (await publicClient(flags, io)).get<ListOf<CatalogModelView>>('/api/models');
      const rows = list.data.filter((m) => (!flags.type || m.type === flags.type) && (!flags.provider || m.provider === flags.provider));
      const result = { ...list, data: rows };
      await emit(io, flags.json, result, (ui) => (
        <ui.Table
          rows={rows}
          empty="no models"
          columns={[
            { title: 'MODEL', value: (m) => (m.alias_of ? `${m.id} → ${m.alias_of}` : m.id) },
            { title: 'TYPE', value: (m) => m.type },
            { title: 'CONTEXT', value: (m) => (m.context_window === null ? '' : String(m.context_window)), align: 'right' },
            { title: 'INPUT/1M', value: (m) => priceText(m)[0], align: 'right' },
            { title: 'OUTPUT/1M', value: (m) => priceText(m)[1], align: 'right' },
          ]}
        />
      ));
    });
}
