// A multi-turn chat session with the official openai npm client against BASE_URL: each turn sends
// the whole history as the client saw it (the earlier questions and the answers it was given),
// streamed on odd turns and not on even ones. Prints one JSON line per turn: what the client
// parsed, with the fields that differ between two calls of a server (id, created) blanked, so a
// direct session and one through `retrace shadow` can be compared byte for byte.
// Usage: node shadow_openai_session.mjs BASE_URL API_KEY TURNS
const root = process.env.RETRACE_ROOT;
const { default: OpenAI } = await import(`${root}/tests/npm/node_modules/openai/index.mjs`);
const [baseURL, apiKey, turnsText] = process.argv.slice(2);
const turns = Number(turnsText);

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });
const blank = (object) => JSON.stringify(object, (key, value) =>
  key === "id" || key === "created" ? "" : value);

const questions = ["Plan a walk by the sea.", "Make it shorter.", "Now add a lunch stop.", "Which shoes?"];
const messages = [{ role: "system", content: "You are a terse travel assistant." }];
for (let turn = 0; turn < turns; ++turn) {
  messages.push({ role: "user", content: questions[turn % questions.length] });
  const request = { model: "retrace-sim", messages, max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 2 };
  let answer = "";
  if (turn % 2 === 0) {
    const chunks = [];
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      chunks.push(blank(chunk));
      answer += chunk.choices[0]?.delta?.content ?? "";
    }
    console.log(JSON.stringify({ turn, chunks }));
  } else {
    const response = await client.chat.completions.create(request);
    answer = response.choices[0].message.content;
    console.log(JSON.stringify({ turn, response: blank(response) }));
  }
  messages.push({ role: "assistant", content: answer });
}
