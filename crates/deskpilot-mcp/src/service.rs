//! The MCP service: a [`Server`] made over a host, and the `ServerHandler` rmcp
//! calls — the server's info and instructions, the tool list, and each call handed
//! to the tool table's dispatch.

use std::sync::Arc;

use deskpilot_host::Host;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::Mutex;

use crate::server::Server;
use crate::tools;

impl Server {
    /// A server over `host`. The host decides everything; give it the options of an
    /// MCP session (kind `mcp`, no terminal prompt: stdio is the protocol stream).
    pub fn new(host: Host) -> Server {
        let stop = host.options().stop.clone();
        Server {
            host: Arc::new(Mutex::new(host)),
            stop,
            tools: Arc::new(tools::tools(false)),
            teach: false,
        }
    }

    /// The same server with teach mode (docs/ARCHITECTURE.md §7.19): it publishes
    /// and serves `computer_teach_step` and `computer_teach_batch`.
    pub fn with_teach(mut self) -> Server {
        self.teach = true;
        self.tools = Arc::new(tools::tools(true));
        self
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("deskpilot", env!("CARGO_PKG_VERSION"))
                    .with_title("deskpilot computer use"),
            )
            .with_instructions(tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let args = request.arguments;
        let ctx = &context;
        tracing::debug!(tool = name, "call");
        let Some(result) = self.dispatch(name, args, ctx).await else {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}; tools: {}",
                    deskpilot_core::sanitize::one_line(name),
                    tools::NAMES.join(", ")
                ),
                None,
            ));
        };
        Ok(result.into())
    }
}
