import { useState } from 'react';
import { formatContext } from '../../lib/format.js';
import { formatCount, formatMicros } from '../../lib/money.js';
import { estimateCost, matchesSearch, priceSummary, type CalculatorInput } from '../../lib/pricing.js';
import type { CatalogModel, ModelType } from '../../lib/types.js';
import { Empty, ErrorNotice, Field, Inr, Loading, PageHeader, SelectField } from '../components.js';
import { useApp, useLoad, useTitle } from '../context.js';

const TYPE_LABELS: Record<ModelType, string> = { chat: 'Chat', embedding: 'Embeddings', speech: 'Speech', transcription: 'Transcription', image: 'Images' };

/** The catalog with ₹ prices, a search box, and a cost calculator. */
export function ModelsPage() {
  const { api } = useApp();
  useTitle('Models');
  const models = useLoad((signal) => api.models(signal), [api]);
  const [search, setSearch] = useState('');
  const [type, setType] = useState<ModelType | ''>('');
  const [selected, setSelected] = useState<string>('');

  const all = models.data?.data ?? [];
  const shown = all.filter((model) => (!type || model.type === type) && matchesSearch(model, search));
  const calculatorModel = all.find((model) => model.id === selected) ?? all.find((model) => model.type === 'chat') ?? all[0];

  return (
    <>
      <PageHeader title="Models" lead="Every model the gateway serves, with its price in rupees. Use the catalog id as the request's model." />
      <ErrorNotice error={models.error} />
      {models.loading && !models.data ? <Loading what="Loading the catalog" /> : null}
      {calculatorModel ? <Calculator models={all} model={calculatorModel} onModel={setSelected} /> : null}
      {models.data ? (
        <section className="panel" aria-labelledby="catalog-heading">
          <h2 id="catalog-heading">Catalog</h2>
          <div className="filters catalog-filters">
            <Field label="Search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="gpt-4o, claude, gemini…" hint={`${shown.length} of ${all.length} models`} />
            <SelectField label="Kind" value={type} onChange={(e) => setType(e.target.value as ModelType | '')}>
              <option value="">All kinds</option>
              {(Object.keys(TYPE_LABELS) as ModelType[]).map((kind) => (
                <option key={kind} value={kind}>
                  {TYPE_LABELS[kind]}
                </option>
              ))}
            </SelectField>
          </div>
          {shown.length === 0 ? (
            <Empty>No model matches “{search}”.</Empty>
          ) : (
            <div className="table-wrap">
              <table className="responsive models-table">
                <caption className="visually-hidden">Models and prices</caption>
                <thead>
                  <tr>
                    <th scope="col">Model</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Kind</th>
                    <th scope="col" className="num">
                      Context window
                    </th>
                    <th scope="col" className="num">
                      Input price
                    </th>
                    <th scope="col" className="num">
                      Output price
                    </th>
                    <th scope="col">
                      <span className="visually-hidden">Calculator</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((model) => {
                    const price = priceSummary(model);
                    return (
                      <tr key={model.id}>
                        <th scope="row" data-label="Model">
                          <span className="model-name">{model.name}</span>
                          <code className="model-id">{model.id}</code>
                          {model.alias_of ? <span className="muted block">alias of <code>{model.alias_of}</code></span> : null}
                        </th>
                        <td data-label="Provider">{model.provider}</td>
                        <td data-label="Kind">{TYPE_LABELS[model.type] ?? model.type}</td>
                        <td data-label="Context window" className="num">
                          {formatContext(model.context_window, model.context_window_unit)}
                        </td>
                        <td data-label="Input price" className="num">
                          {price.input !== null ? (
                            <>
                              <Inr value={price.input} /> <span className="unit">{price.unit}</span>
                            </>
                          ) : (
                            '—'
                          )}
                        </td>
                        <td data-label="Output price" className="num">
                          {price.output !== null ? (
                            <>
                              <Inr value={price.output} /> <span className="unit">{price.unit}</span>
                            </>
                          ) : (
                            '—'
                          )}
                        </td>
                        <td className="actions">
                          <button
                            type="button"
                            className="button secondary small"
                            aria-label={`Price a call of ${model.name}`}
                            onClick={() => {
                              setSelected(model.id);
                              document.getElementById('calculator-heading')?.focus();
                            }}
                          >
                            Price a call
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </section>
      ) : null}
    </>
  );
}

function numberOf(text: string): number {
  const value = Number(text.replace(/[,\s]/g, ''));
  return Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

function Calculator({ models, model, onModel }: { models: CatalogModel[]; model: CatalogModel; onModel: (id: string) => void }) {
  const [values, setValues] = useState({ inputTokens: '1000', outputTokens: '500', cachedTokens: '0', characters: '1000', seconds: '60', images: '1', imageOption: '' });
  const set = (change: Partial<typeof values>): void => setValues((v) => ({ ...v, ...change }));
  const input: CalculatorInput = {
    inputTokens: numberOf(values.inputTokens),
    outputTokens: numberOf(values.outputTokens),
    cachedTokens: numberOf(values.cachedTokens),
    characters: numberOf(values.characters),
    seconds: numberOf(values.seconds),
    images: numberOf(values.images),
  };
  if (values.imageOption) input.imageOption = values.imageOption;
  const estimate = estimateCost(model, input);
  const billedIn = model.pricing.billed_in;
  const imageOptions = Object.keys(model.pricing.image_prices ?? {});

  return (
    <section className="panel calculator" aria-labelledby="calculator-heading">
      <h2 id="calculator-heading" tabIndex={-1}>
        Cost calculator
      </h2>
      <form className="form-grid" onSubmit={(event) => event.preventDefault()}>
        <SelectField label="Model" value={model.id} onChange={(e) => onModel(e.target.value)}>
          {models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.id}
            </option>
          ))}
        </SelectField>
        {billedIn === 'tokens' ? (
          <>
            <Field label="Input tokens" inputMode="numeric" value={values.inputTokens} onChange={(e) => set({ inputTokens: e.target.value })} />
            {model.pricing.cache_read_per_1m !== null ? (
              <Field label="Of which cached" inputMode="numeric" value={values.cachedTokens} onChange={(e) => set({ cachedTokens: e.target.value })} hint="Prompt tokens read from the provider's cache." />
            ) : null}
            {model.type !== 'embedding' ? <Field label="Output tokens" inputMode="numeric" value={values.outputTokens} onChange={(e) => set({ outputTokens: e.target.value })} /> : null}
          </>
        ) : null}
        {billedIn === 'characters' ? <Field label="Characters of text" inputMode="numeric" value={values.characters} onChange={(e) => set({ characters: e.target.value })} /> : null}
        {billedIn === 'seconds' ? <Field label="Seconds of audio" inputMode="numeric" value={values.seconds} onChange={(e) => set({ seconds: e.target.value })} /> : null}
        {billedIn === 'images' ? (
          <>
            <Field label="Images" inputMode="numeric" value={values.images} onChange={(e) => set({ images: e.target.value })} />
            {imageOptions.length > 0 ? (
              <SelectField label="Size and quality" value={values.imageOption} onChange={(e) => set({ imageOption: e.target.value })}>
                <option value="">Default price</option>
                {imageOptions.map((option) => (
                  <option key={option} value={option}>
                    {option}
                  </option>
                ))}
              </SelectField>
            ) : null}
            {model.pricing.input_per_1m ? <Field label="Prompt tokens" inputMode="numeric" value={values.inputTokens} onChange={(e) => set({ inputTokens: e.target.value })} /> : null}
          </>
        ) : null}
      </form>
      <div className="estimate" aria-live="polite">
        <p className="estimate-total">
          <span>Estimated cost</span> <strong data-testid="estimate">{formatMicros(estimate.micros)}</strong>
        </p>
        <ul className="estimate-lines">
          {estimate.lines.map((line) => (
            <li key={line.label}>
              {line.label}: {formatCount(line.quantity)} at {formatMicros(line.priceMicros)} per {line.per}
            </li>
          ))}
        </ul>
        <p className="hint">Rounded up to the next ₹0.000001, as the gateway bills. Context window: {formatContext(model.context_window, model.context_window_unit)}.</p>
      </div>
    </section>
  );
}
