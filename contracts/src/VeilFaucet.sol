// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IMintable {
    function mint(address to, uint256 value) external;
}

/// @title Devnet faucet
/// @notice Funds an address with the native asset and test tokens in one
/// transaction. Only the devnet's faucet account may call drip; the test
/// tokens' minter is this contract.
contract VeilFaucet {
    address public immutable owner;

    error NotOwner();
    error LengthMismatch();
    error NativeTransferFailed();

    event Dripped(address indexed to, uint256 native);

    constructor() {
        owner = msg.sender;
    }

    function drip(address payable to, address[] calldata tokens, uint256[] calldata amounts) external payable {
        if (msg.sender != owner) revert NotOwner();
        if (tokens.length != amounts.length) revert LengthMismatch();
        if (msg.value != 0) {
            (bool ok,) = to.call{value: msg.value}("");
            if (!ok) revert NativeTransferFailed();
        }
        for (uint256 i = 0; i < tokens.length; i++) {
            IMintable(tokens[i]).mint(to, amounts[i]);
        }
        emit Dripped(to, msg.value);
    }
}
