package main

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmdeploy"
)

const contractsUsage = `usage: veild contracts deploy --chain CHAIN --rpc URL (--key-file FILE | --keystore FILE --password-file FILE) [flags]

Deploys Veil's contracts on an EVM network (the announcer if the canonical
ERC-5564 singleton is absent, StealthSender, VeilNames, and with
--test-tokens test USDC/ZEN), waits for each receipt, and prints the
VEIL_RPC_<CHAIN> and VEIL_EVM_<CHAIN>_* variables for veild serve on
stdout (progress on stderr). Running it again reuses, after checking them
on chain, the contracts its state file records. See docs/operations.md.
`

// mainnetChainIDs never get test tokens: anybody the minter trusts could
// mint "USDC" there.
var mainnetChainIDs = map[uint64]bool{1: true, 137: true, 8453: true, 10: true, 42161: true}

func contractsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "deploy" {
		fmt.Fprint(stderr, contractsUsage)
		return &usageError{"usage: veild contracts deploy --chain CHAIN --rpc URL --key-file FILE"}
	}
	fs := newFlagSet("veild contracts deploy", stderr)
	fs.Usage = func() { fmt.Fprint(stderr, contractsUsage, "\nflags:\n"); fs.PrintDefaults() }
	chain := fs.String("chain", "", "EVM chain: "+joinIDs(evm.EVMChains()))
	rpcURL := fs.String("rpc", "", "JSON-RPC URL of the network (default: $VEIL_RPC_<CHAIN>)")
	keyFile := fs.String("key-file", "", "file holding the deployer's private key (hex, 0x optional)")
	keystoreFile := fs.String("keystore", "", "the deployer's encrypted keystore (JSON) file, with --password-file")
	passwordFile := fs.String("password-file", "", "file holding the keystore's password")
	chainID := fs.Uint64("chain-id", 0, "expected chain id (0: whatever the node serves)")
	announcer := fs.String("announcer", "", "ERC-5564 announcer to use (default: the canonical singleton if present, else a new one)")
	testTokens := fs.String("test-tokens", "auto", "deploy test USDC (6) and ZEN (18, not on horizen): yes, no, or auto (yes on development chain ids 31337/1337 and on horizen's test network)")
	minter := fs.String("minter", "", "address allowed to mint the test tokens (default: the deployer)")
	statePath := fs.String("state", "", "state file of what was deployed (default: ./veil-contracts-<chain>.json)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long (run again to resume)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	id, err := chains.Parse(*chain)
	if err != nil || id.Family() != chains.FamilyEVM {
		return &usageError{fmt.Sprintf("--chain %q: want one of %s", *chain, joinIDs(evm.EVMChains()))}
	}
	if *rpcURL == "" {
		*rpcURL = os.Getenv("VEIL_RPC_" + envChain(id))
	}
	if *rpcURL == "" {
		return &usageError{"--rpc URL is required (or VEIL_RPC_" + envChain(id) + ")"}
	}
	key, err := loadDeployerKey(*keyFile, *keystoreFile, *passwordFile)
	if err != nil {
		return err
	}
	opts := evmdeploy.Options{Chain: id, RPCURL: *rpcURL, Key: key, ChainID: *chainID, Progress: stderr, StatePath: *statePath}
	if opts.StatePath == "" {
		opts.StatePath = "veil-contracts-" + string(id) + ".json"
	}
	for flagName, v := range map[string]string{"--announcer": *announcer, "--minter": *minter} {
		if v != "" && !common.IsHexAddress(v) {
			return &usageError{fmt.Sprintf("%s %q: not an address", flagName, v)}
		}
	}
	if *announcer != "" {
		opts.Announcer = common.HexToAddress(*announcer)
	}
	if *minter != "" {
		opts.Minter = common.HexToAddress(*minter)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	served, err := servedChainID(ctx, *rpcURL)
	if err != nil {
		return err
	}
	switch strings.ToLower(*testTokens) {
	case "yes", "true":
		opts.TestTokens = true
	case "no", "false":
	case "auto":
		opts.TestTokens = evm.DevChainIDs[served] || id == chains.Horizen && served == evm.TestnetChainID(chains.Horizen)
	default:
		return &usageError{fmt.Sprintf("--test-tokens %q: want yes, no or auto", *testTokens)}
	}
	if opts.TestTokens && mainnetChainIDs[served] {
		return &usageError{fmt.Sprintf("chain id %d is a main network: no test tokens there (use --test-tokens no and configure real tokens)", served)}
	}
	res, err := evmdeploy.Deploy(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# Veil contracts on %s (chain id %d), deployed by %s; state in %s\n", res.Chain, res.ChainID, res.Deployer.Hex(), opts.StatePath)
	fmt.Fprint(stdout, res.Env())
	return nil
}

func servedChainID(ctx context.Context, url string) (uint64, error) {
	conn, err := evmdeploy.Dial(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	id, err := conn.ChainID(ctx)
	if err != nil {
		return 0, fmt.Errorf("eth_chainId at %s: %w", url, err)
	}
	return id.Uint64(), nil
}

// loadDeployerKey reads a hex private key file, or decrypts a keystore
// file with the password in another file. The key never appears in
// output or errors.
func loadDeployerKey(keyFile, keystoreFile, passwordFile string) (*ecdsa.PrivateKey, error) {
	switch {
	case keyFile != "" && keystoreFile != "":
		return nil, &usageError{"give --key-file or --keystore, not both"}
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		h := strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
		key, err := crypto.HexToECDSA(h)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("--key-file %s: not a hex secp256k1 private key", keyFile)}
		}
		return key, nil
	case keystoreFile != "":
		if passwordFile == "" {
			return nil, &usageError{"--keystore needs --password-file"}
		}
		js, err := os.ReadFile(keystoreFile)
		if err != nil {
			return nil, fmt.Errorf("--keystore: %w", err)
		}
		pw, err := os.ReadFile(passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--password-file: %w", err)
		}
		k, err := keystore.DecryptKey(js, strings.TrimRight(string(pw), "\r\n"))
		if err != nil {
			return nil, fmt.Errorf("--keystore %s: %w (wrong password?)", keystoreFile, err)
		}
		return k.PrivateKey, nil
	}
	return nil, &usageError{"the deployer's key is required: --key-file FILE, or --keystore FILE --password-file FILE"}
}

func joinIDs(ids []chains.ID) string {
	var s []string
	for _, id := range ids {
		s = append(s, string(id))
	}
	return strings.Join(s, ", ")
}
