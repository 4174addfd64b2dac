#!/usr/bin/env node
// CartPole for the example Raw Job: no dependencies, one file, so it ships as one artifact.
// CartPole dynamics (Barto, Sutton & Anderson 1983), as in the classic control benchmark.
function step(state, force) {
  const [x, xDot, theta, thetaDot] = state;
  const gravity = 9.8,
    cartMass = 1.0,
    poleMass = 0.1,
    length = 0.5,
    tau = 0.02;
  const total = cartMass + poleMass;
  const cos = Math.cos(theta),
    sin = Math.sin(theta);
  const temp = (force + poleMass * length * thetaDot * thetaDot * sin) / total;
  const thetaAcc = (gravity * sin - cos * temp) / (length * (4 / 3 - (poleMass * cos * cos) / total));
  const xAcc = temp - (poleMass * length * thetaAcc * cos) / total;
  const next = [x + tau * xDot, xDot + tau * xAcc, theta + tau * thetaDot, thetaDot + tau * thetaAcc];
  const done = Math.abs(next[0]) > 2.4 || Math.abs(next[2]) > (12 * Math.PI) / 180;
  return { state: next, done };
}

function random(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// `cartpole.mjs train --episodes N`: hill-climbing over a linear policy, small enough to run
// anywhere in a second, real enough to show a learning curve in the task's logs.
// `cartpole.mjs env --steps N`: steps the environment with a fixed controller.
// `cartpole.mjs serve`: an environment that stays up, one episode a second, until it is stopped
// (SIGTERM ends it at once): what the tour stops with spec.stopped.
const [mode, ...rest] = process.argv.slice(2);
const option = (name, fallback) => {
  const i = rest.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(rest[i + 1]) || fallback;
};

function episodeLength(weights) {
  let state = [0, 0, 0.01, 0];
  for (let t = 1; t <= 500; t++) {
    const score = weights.reduce((acc, w, i) => acc + w * state[i], 0);
    const result = step(state, score > 0 ? 10 : -10);
    if (result.done) return t;
    state = result.state;
  }
  return 500;
}

if (mode === "train") {
  const episodes = option("episodes", 200);
  const rand = random(Number(process.env.SEED ?? 1));
  let best = [0, 0, 0, 0].map(() => rand() * 2 - 1);
  let bestReturn = episodeLength(best);
  for (let episode = 1; episode <= episodes; episode++) {
    const candidate = best.map((w) => w + (rand() * 2 - 1) * 0.5);
    const ret = episodeLength(candidate);
    if (ret >= bestReturn) [best, bestReturn] = [candidate, ret];
    if (episode % 20 === 0) console.log(`episode ${episode}: best return ${bestReturn}`);
  }
  console.log(`done: best return ${bestReturn}, weights ${best.map((w) => w.toFixed(3)).join(",")}`);
  process.exit(bestReturn >= 100 ? 0 : 1);
} else if (mode === "env") {
  const steps = option("steps", 500);
  let state = [0, 0, 0.02, 0];
  let episode = 1;
  let length = 0;
  for (let t = 0; t < steps; t++) {
    const result = step(state, state[2] + 0.5 * state[3] > 0 ? 10 : -10);
    state = result.state;
    length++;
    if (result.done) {
      console.log(`episode ${episode++}: ${length} steps`);
      state = [0, 0, 0.02, 0];
      length = 0;
    }
  }
  console.log(`stepped ${steps} times over ${episode} episode(s)`);
} else if (mode === "serve") {
  process.on("SIGTERM", () => {
    console.log("stopped");
    process.exit(0);
  });
  let episode = 1;
  setInterval(() => {
    let state = [0, 0, 0.02, 0];
    let length = 0;
    for (let done = false; !done && length < 500; length++) {
      ({ state, done } = step(state, state[2] + 0.5 * state[3] > 0 ? 10 : -10));
    }
    console.log(`episode ${episode++}: ${length} steps`);
  }, 1000);
} else {
  console.error("usage: cartpole.mjs train [--episodes N] | env [--steps N] | serve");
  process.exit(2);
}
