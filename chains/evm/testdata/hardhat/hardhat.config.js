// Hardhat 2 node for chains/evm's interop tests: chain id 31337, automine,
// the default funded accounts. Port and host come from the command line.
module.exports = {
  solidity: "0.8.24",
  networks: {
    hardhat: {
      chainId: 31337,
      hardfork: "cancun",
    },
  },
};
